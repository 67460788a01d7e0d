/**
 * The conformance suite against the gVisor runtime: a real daemon (runsc, namespaces, SQLite, agent).
 * Run: `npx tsc -b packages/conformance && node --test packages/conformance/dist/gvisor.test.js`.
 */
import { registerConformanceSuite } from './suite.js';

registerConformanceSuite(
  { runtime: 'gvisor', openConnectionAtPause: 'refused' },
  // RAMIFY_CONFORMANCE_LOG=/path keeps the daemon's log (with RAMIFY_CONFORMANCE_LOG_LEVEL, default warn).
  { harness: { keepLogAt: process.env.RAMIFY_CONFORMANCE_LOG || undefined, logLevel: logLevel(process.env.RAMIFY_CONFORMANCE_LOG_LEVEL) } },
);

function logLevel(value: string | undefined): 'warn' | 'info' | 'debug' {
  return value === 'info' || value === 'debug' ? value : 'warn';
}
