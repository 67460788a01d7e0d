/**
 * `@ramify/conformance`: the end-to-end conformance suite every runtime must pass, run against a real
 * Ramify daemon through the SDK and the REST API.
 *
 * ```ts
 * import { registerConformanceSuite } from '@ramify/conformance';
 * registerConformanceSuite({ runtime: 'gvisor' });   // in a *.test.ts file
 * ```
 */
export { registerConformanceSuite, conformanceSkipReason, type ConformanceSuiteOpts } from './suite.js';
export { createContext, isFullRun, FULL_RUN_ENV, CASE_SANDBOX_TIMEOUT_MS, type ConformanceTarget, type SuiteContext } from './context.js';
export { DaemonHarness, CONFORMANCE_PREFIX, MICROVM_PREFIX, DEFAULT_WARM_SLOTS, LIVE_STATES, type HarnessOptions, type RawCallOpts, type RawResponse } from './harness.js';
export { listNamespaces, listSandboxNamespaces, sandboxNamespaceOf, removeHostNetwork, removeEgressLogger, removeRunscContainers, hostRun, type HostCommandResult } from './host-cleanup.js';
export { listQemuProcesses, qemuProcessesNaming, qemuProcessesInNamespaces, removeQemuProcesses, sandboxQemuProcess, namespaceOfPid, type QemuProcess } from './qemu-processes.js';
export { logOptionsFromEnv } from './run-options.js';
export { armInterruptCleanup, type InterruptCleanupTarget } from './interrupt-cleanup.js';
export type { DaemonEntryConfig, DaemonEntryReady } from './daemon-entry.js';
