/**
 * The conformance suite against the gVisor runtime: a real daemon (runsc, namespaces, SQLite, agent)
 * opening only gVisor, network prefix `rmc`. Every case runs on every run.
 * Run: `npx tsc -b packages/conformance && node --test packages/conformance/dist/gvisor.test.js`.
 * RAMIFY_CONFORMANCE_LOG=/path keeps the daemon's log (with RAMIFY_CONFORMANCE_LOG_LEVEL, default warn).
 */
import { CONFORMANCE_PREFIX } from './harness.js';
import { logOptionsFromEnv } from './run-options.js';
import { registerConformanceSuite } from './suite.js';

registerConformanceSuite(
  { runtime: 'gvisor', openConnectionAtPause: 'refused' },
  { harness: { prefix: CONFORMANCE_PREFIX, runtimes: ['gvisor'], ...logOptionsFromEnv() } },
);
