export { MicrovmRuntime, type MicrovmRuntimeOptions } from './microvm-runtime.js';
export { prepareGuestKernel, type GuestKernel, type PrepareGuestKernelOptions } from './guest-kernel.js';
export { detectAcceleration, qemuVersion, type AccelerationChoice, type DetectAccelerationOptions } from './acceleration.js';
