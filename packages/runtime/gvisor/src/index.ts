export { GvisorRuntime, DEFAULT_AGENT_SOCKET, type GvisorRuntimeOptions } from './gvisor-runtime.js';
export { MIN_RUNSC_RELEASE, runscRelease, runscVersion, type RunscPlatform } from './runsc.js';
export { buildOciSpec } from './oci-spec.js';
export type { AgentDialer } from './agent-channel.js';
