/**
 * `@ramify/core/testsuite`: the port conformance suites kept beside the ports (for tests; imports
 * node:test). {@link runtimeConformance} checks a Runtime through the port with the real agent inside.
 * The snapshot storage suite is `@ramify/storage/testsuite`.
 */
export { runtimeConformance } from './runtime-suite.js';
export type { RuntimeHarness } from './harness.js';
