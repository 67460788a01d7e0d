/**
 * What every VM operation needs (binaries, kernel, instance directories, limits), and the two QEMU
 * launches built from it: the sandbox's VM and the loader that materializes a checkpoint.
 */
import { discardGuardArgv } from './discard-guard.js';
import type { GuestKernel } from './guest-kernel.js';
import { GUEST_TAP, LOADER_TAP } from './guest-link.js';
import type { InstanceDirs } from './instances.js';
import { kernelArgs, qemuArgs, type MachineConfig } from './qemu-argv.js';
import { startQemu, type StartedQemu } from './qemu-process.js';

export interface VmEnvironment {
  qemuPath: string;
  /** QEMU's major.minor release (`qemuRelease`), stamped into every image this host makes. */
  qemuRelease: string;
  qemuImgPath: string;
  kernel: GuestKernel;
  /** `-kernel` of every QEMU that does not boot (restores, loaders): see restore-kernel.ts. */
  restoreKernelPath: string;
  dirs: InstanceDirs;
  /** TCG translation cache, MiB. */
  tcgTbSizeMB: number;
  /** Host TSC kHz for TCG guests' kernel command line. */
  tscKhz: number | null;
  /** How long QEMU may take to answer QMP after it was spawned. */
  startTimeoutMs: number;
  /** Perl, which installs the discard guard of restored VMs (discard-guard.ts). */
  perlPath: string;
}

export interface VmStart {
  sandboxId: string;
  machine: MachineConfig;
  netnsPath: string;
  /** See `QemuLaunch.ram`. */
  ram: 'shared' | 'private';
  ramFile: string;
  /** The initrd to pass (a per-boot one for a fresh boot; the base one for a restore). */
  initrd: string;
  start: 'fresh-paused' | 'incoming';
}

/**
 * Start the sandbox's VM (in its network namespace, on its tap). A VM mapping an image's RAM
 * copy-on-write runs under the discard guard, so its balloon never punches holes into the image.
 */
export function startVm(env: VmEnvironment, vm: VmStart): Promise<StartedQemu> {
  const file = (name: Parameters<InstanceDirs['file']>[1]): string => env.dirs.file(vm.sandboxId, name);
  const args = qemuArgs({
    name: `ramify-${vm.sandboxId}`,
    machine: vm.machine,
    ram: vm.ram,
    tap: GUEST_TAP,
    start: vm.start,
    tcgTbSizeMB: env.tcgTbSizeMB,
    append: kernelArgs({ accelerator: vm.machine.accelerator, tscKhz: env.tscKhz }),
    paths: {
      ramFile: vm.ramFile,
      disk: file('overlay'),
      consoleLog: file('console'),
      qmpSocket: file('qmp'),
      agentSocket: file('agent'),
      kernel: vm.start === 'incoming' ? env.restoreKernelPath : env.kernel.kernelPath,
      initrd: vm.initrd,
    },
  });
  return startQemu({
    qemuPath: env.qemuPath,
    args,
    netnsPath: vm.netnsPath,
    logFile: file('qemuLog'),
    qmpSocket: file('qmp'),
    readyTimeoutMs: env.startTimeoutMs,
    ...(vm.ram === 'private' ? { launcher: discardGuardArgv(env.perlPath) } : {}),
  });
}

/**
 * Start a loader: the same machine, paused and waiting for an incoming migration, with its RAM as a
 * shared mapping of `ramFile` (the new image's RAM file) and no agent socket. It runs in the sandbox's
 * namespace on a throw-away tap of its own (virtio-net state only loads into a tap-backed NIC).
 */
export function startLoader(env: VmEnvironment, vm: { sandboxId: string; machine: MachineConfig; netnsPath: string }, ramFile: string): Promise<StartedQemu> {
  const { sandboxId, machine } = vm;
  const file = (name: Parameters<InstanceDirs['file']>[1]): string => env.dirs.file(sandboxId, name);
  const args = qemuArgs({
    name: `ramify-loader-${sandboxId}`,
    machine,
    ram: 'shared',
    tap: LOADER_TAP,
    start: 'incoming-paused',
    tcgTbSizeMB: env.tcgTbSizeMB,
    append: kernelArgs({ accelerator: machine.accelerator, tscKhz: env.tscKhz }),
    paths: {
      ramFile,
      disk: file('overlay'),
      consoleLog: file('loaderConsole'),
      qmpSocket: file('loaderQmp'),
      agentSocket: null,
      kernel: env.restoreKernelPath,
      initrd: env.kernel.initrdPath,
    },
  });
  return startQemu({ qemuPath: env.qemuPath, args, netnsPath: vm.netnsPath, logFile: file('loaderLog'), qmpSocket: file('loaderQmp'), readyTimeoutMs: env.startTimeoutMs });
}
