/**
 * The conformance suite against the gVisor runtime: a real daemon (runsc, namespaces, SQLite, agent).
 * Run: `npx tsc -b packages/conformance && node --test packages/conformance/dist/gvisor.test.js`.
 */
import { registerConformanceSuite } from './suite.js';

registerConformanceSuite({ runtime: 'gvisor', openConnectionAtPause: 'refused' });
