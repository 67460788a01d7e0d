export { MicrovmRuntime, type MicrovmRuntimeOptions } from './microvm-runtime.js';
export { prepareGuestKernel, type GuestKernel, type PrepareGuestKernelOptions } from './guest-kernel.js';
export { detectAcceleration, hostTscKhz, qemuVersion, type AccelerationChoice, type DetectAccelerationOptions } from './acceleration.js';
export { AGENT_PORT_NAME, AGENT_PORT_PATH, BOOT_MARKER } from './guest-init.js';
export { GUEST_MAC, type Accelerator, type MachineConfig } from './qemu-argv.js';
export { IMAGE_FILES, IMAGE_FORMAT_VERSION, readImageManifest, type ImageManifest } from './image-files.js';
export { CpuQuotas, CPU_PERIOD_US, detectCgroupLayout, type AppliedCpuQuota, type CgroupLayout } from './cpu-quota.js';
export { MIN_MEMORY_MB } from './memory-limit.js';
