/**
 * The conformance suite against the gVisor runtime: a real daemon (runsc, namespaces, SQLite, agent)
 * opening only gVisor, network prefix `rmc`. Cases marked *extended* (the slow variants: more crash
 * points, 200 MB and 32 MiB transfers, ten cycles, memory fills) run with RAMIFY_TEST_FULL=1 (`npm run
 * test:full`); every area keeps its representative cases on every run, so `npm test` stays in budget.
 * Run: `npx tsc -b packages/conformance && node --test packages/conformance/dist/gvisor.test.js`.
 * RAMIFY_CONFORMANCE_LOG=/path keeps the daemon's log (with RAMIFY_CONFORMANCE_LOG_LEVEL, default warn).
 */
import { CONFORMANCE_PREFIX } from './harness.js';
import { logOptionsFromEnv } from './run-options.js';
import { registerConformanceSuite } from './suite.js';

registerConformanceSuite(
  { runtime: 'gvisor', openConnectionAtPause: 'refused', extendedCases: 'full-run' },
  { harness: { prefix: CONFORMANCE_PREFIX, runtimes: ['gvisor'], ...logOptionsFromEnv() } },
);
