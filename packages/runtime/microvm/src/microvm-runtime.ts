/**
 * `MicrovmRuntime`: sandboxes as QEMU virtual machines with their own (Debian) guest kernel.
 *
 * - boot: the template's rootfs as an ext4 base disk + a qcow2 overlay, the guest kernel and initramfs
 *   (which configures eth0 from the sandbox namespace and switch_roots into `argv`), guest RAM in a
 *   file of the instance directory.
 * - checkpoint: RAM file + device state + frozen disk into the image directory (see checkpoint.ts).
 * - restore: a new QEMU mapping the image's RAM file copy-on-write (N restores = N forks sharing
 *   memory) loads the device state and runs; its disk is a new overlay on the image's frozen disk.
 * - the agent channel is a virtio-serial port whose host side is `<run>/<id>/agent.sock`.
 *
 * QEMU processes are detached and outlive the daemon; `<workDir>/run/<id>/` finds them again.
 *
 * Resources. A VM's machine (vCPUs, RAM size) is fixed when its template is booted — a restore must
 * use the image's machine — so templates boot with at least `imageCpuCount` vCPUs and `imageMemoryMB`
 * of (sparse) RAM, and every boot and restore applies the sandbox's own limits:
 * - `memoryMB`: a virtio balloon holds the RAM above it (memory-limit.ts); more than the image's RAM
 *   size is refused (`VALIDATION_FAILED`);
 * - `cpuCount`: a CFS quota of `cpuCount` cores on the QEMU process, in the cgroup `/ramify/<id>`
 *   like gVisor sandboxes (cpu-quota.ts); the guest sees the image's vCPUs;
 * - `diskSizeMB`: the restored disk grows to it (disks.ts); below the image's disk is refused
 *   (`VALIDATION_FAILED`).
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { openVirtioChannel } from '@ramify/agent';
import { HeldAgentSockets } from './held-agent-sockets.js';
import { RamifyError, type RuntimeName } from '@ramify/contracts';
import type { RestoreOptions, Runtime, RuntimeCapabilities, RuntimeInstanceStatus, RuntimeSandboxSpec, RuntimeUsage, SandboxResources } from '@ramify/core';
import { qemuRelease, qemuVersion, type AccelerationChoice } from './acceleration.js';
import { finishCheckpointFiles, finishInterruptedForkPoint, checkpointInstance, forkPointInstance, undoCheckpoint } from './checkpoint.js';
import { CpuQuotas, detectCgroupLayout } from './cpu-quota.js';
import { allocatedBytes, processUsage } from './cpu-usage.js';
import { createOverlay, diskGrowth, diskVirtualSizeBytes, ensureBaseDisk, linkOrCopy, MAX_DISK_SIZE_MB, ROOT_DRIVE_ID } from './disks.js';
import type { GuestKernel } from './guest-kernel.js';
import { prepareGuestLink, readGuestAddressing, removeGuestLink } from './guest-link.js';
import { IMAGE_FILES, IMAGE_FORMAT_VERSION, assertSameQemu, readImageManifest, type InstanceRecord } from './image-files.js';
import { composeBootInitrd } from './initramfs.js';
import { InstanceDirs } from './instances.js';
import { checkMemoryLimit, setMemoryLimit, waitForMemoryLimit } from './memory-limit.js';
import { streamFileTo } from './migration-stream.js';
import type { MachineConfig } from './qemu-argv.js';
import { isQemuOf } from './qemu-process.js';
import { waitForMigration, type QmpClient } from './qmp.js';
import { restoreKernelStub } from './restore-kernel.js';
import { startVm, type VmEnvironment } from './vm-environment.js';
import { run, tail } from './host-tools.js';

/** RAM (MiB) template images are booted with unless `imageMemoryMB` says otherwise. */
export const DEFAULT_IMAGE_MEMORY_MB = 1024;

/**
 * How long the first agent connection after a boot may take, ms, by accelerator. Under TCG the guest
 * kernel and the node agent boot in ~10 s on an idle 2-core host, but took past 30 s in
 * microvm-runtime.test under a CPU hog with two TCG guests of earlier tests running beside it (ps
 * showed each at ~25% of a core since its restore; a settled idle sandbox VM costs ~1.5% of a core,
 * read from /proc/PID/stat over 30 s). KVM boots in about a second.
 */
export const DEFAULT_BOOT_AGENT_TIMEOUT_MS: Readonly<Record<AccelerationChoice['accelerator'], number>> = { kvm: 30_000, tcg: 120_000 };

export interface MicrovmRuntimeOptions {
  /** Working directory: `run/` (one directory per sandbox) and `bases/` (ext4 base disks; keep them: images refer to them). */
  workDir: string;
  /** From {@link prepareGuestKernel}. */
  kernel: GuestKernel;
  /** From {@link detectAcceleration}. */
  acceleration: AccelerationChoice;
  /** Host file whose content becomes the guest's /etc/resolv.conf at boot. */
  resolvConfPath: string;
  /** Default `qemu-system-x86_64` from PATH. */
  qemuPath?: string;
  /** QEMU's version line when the caller already read it (`qemuVersion`); default: read it here. */
  qemuVersion?: string;
  /** Default `qemu-img` from PATH. */
  qemuImgPath?: string;
  /** Size of the guest's root filesystem, MiB; default 2048 (sparse: only what is written costs disk). */
  diskSizeMB?: number;
  /** TCG translation cache, MiB; default 32 (cuts QEMU's own memory from ~150 to ~60 MiB per VM). */
  tcgTbSizeMB?: number;
  /** How long QEMU may take to answer QMP after spawn, ms; default 30000. */
  startTimeoutMs?: number;
  /** How long {@link MicrovmRuntime.openAgentChannel} waits for the agent's handshake, ms; default 30000. */
  agentConnectTimeoutMs?: number;
  /**
   * How long the first {@link MicrovmRuntime.openAgentChannel} after a {@link MicrovmRuntime.boot} waits, ms:
   * the guest kernel and the agent start from nothing. Default {@link DEFAULT_BOOT_AGENT_TIMEOUT_MS}, by
   * accelerator.
   */
  bootAgentTimeoutMs?: number;
  /**
   * RAM size templates are booted with when they ask for less, MiB; default {@link DEFAULT_IMAGE_MEMORY_MB} (the template
   * builder's default). It is the most memory a sandbox restored from the image can have (`memoryMB`
   * above it is refused). Untouched RAM costs no disk and restores as fast, but checkpointing a
   * restored VM (pause, snapshot, fork of a running sandbox) reads all of it: ~3.5 s per GiB here.
   */
  imageMemoryMB?: number;
  /** vCPUs templates are booted with when they ask for fewer; default 2. A sandbox's `cpuCount` is a quota over them. */
  imageCpuCount?: number;
  /** Parent cgroup of every sandbox's CPU quota; null disables quotas. Default `/ramify` (as gVisor). */
  cgroupParent?: string | null;
  /** Default `perl` from PATH (Debian's Essential perl-base); installs the discard guard of restored VMs. */
  perlPath?: string;
}

export class MicrovmRuntime implements Runtime {
  readonly name: RuntimeName = 'microvm';
  /**
   * Template images are cached per image format (see `IMAGE_FORMAT_VERSION`), per QEMU release (only
   * that release restores them) and, when it is not the default, per `imageMemoryMB` (an image's RAM
   * size is fixed when it is made).
   */
  get imageFormat(): string {
    const memory = this.options.imageMemoryMB === DEFAULT_IMAGE_MEMORY_MB ? '' : `-ram${this.options.imageMemoryMB}`;
    return `microvm-${IMAGE_FORMAT_VERSION}-qemu${this.env.qemuRelease}${memory}`;
  }
  get capabilities(): RuntimeCapabilities {
    return {
      memorySnapshot: true,
      forkSharesMemory: true,
      agentChannel: 'virtio-serial',
      // The checkpoint freezes the whole VM, its TCP state included: open connections do not block it.
      checkpointNeedsQuietNetwork: false,
      rootDisk: { defaultSizeMB: this.options.diskSizeMB, maxSizeMB: MAX_DISK_SIZE_MB },
      // The guest kernel has an OOM killer: it chooses the victim; the agent keeps out of its way and reports.
      oomKiller: 'kernel',
    };
  }
  /** Operator summary: QEMU version and the accelerator with the reason it was chosen. */
  get summary(): string {
    return `${this.qemuVersion.replace(/^QEMU emulator version /, 'QEMU ')}, ${this.acceleration.accelerator.toUpperCase()} (${this.acceleration.reason})`;
  }

  /** Checkpoints running in this process, by sandbox id (settleInterrupted waits for them). */
  private readonly inFlight = new Map<string, Promise<unknown>>();
  /** Boots and restores running in this process (their VMs are not `ready` yet but are no leftovers). */
  private readonly starting = new Set<string>();
  /** Sandboxes booted by this process whose agent has not answered yet (they get `bootAgentTimeoutMs`). */
  private readonly bootedWithoutAgent = new Set<string>();
  /** Agent connections made before a restore's state loads (see held-agent-sockets.ts). */
  private readonly heldAgentSockets = new HeldAgentSockets();

  private constructor(
    private readonly env: VmEnvironment,
    private readonly options: { workDir: string; resolvConfPath: string; diskSizeMB: number; agentConnectTimeoutMs: number; bootAgentTimeoutMs: number; imageMemoryMB: number; imageCpuCount: number },
    /** The CPU quota cgroups of the sandboxes. */
    readonly cpuQuotas: CpuQuotas,
    /** The accelerator in use and why. */
    readonly acceleration: AccelerationChoice,
    /** `qemu-system-x86_64 --version` first line. */
    readonly qemuVersion: string,
  ) {}

  /**
   * Check QEMU and qemu-img, prepare the work directory. Rejects `RUNTIME_UNAVAILABLE` naming the
   * missing apt package when QEMU or qemu-img is not installed.
   */
  static async open(options: MicrovmRuntimeOptions): Promise<MicrovmRuntime> {
    const qemuPath = options.qemuPath ?? 'qemu-system-x86_64';
    const qemuImgPath = options.qemuImgPath ?? 'qemu-img';
    const version = options.qemuVersion ?? (await qemuVersion(qemuPath));
    await run([qemuImgPath, '--version']);
    const perlPath = options.perlPath ?? 'perl';
    const perl = await run([perlPath, '-e', 'exit 0']).catch(() => null);
    if (perl?.code !== 0) throw new RamifyError('RUNTIME_UNAVAILABLE', `cannot run ${perlPath}, which guards restored microVMs' RAM images (install it with: apt-get install -y perl-base)`);
    for (const file of [options.kernel.kernelPath, options.kernel.initrdPath]) {
      if (!existsSync(file)) throw new RamifyError('RUNTIME_UNAVAILABLE', `guest kernel file ${file} is missing: run prepareGuestKernel again`);
    }
    const dirs = new InstanceDirs(join(options.workDir, 'run'));
    await mkdir(dirs.runRoot, { recursive: true });
    await mkdir(join(options.workDir, 'bases'), { recursive: true });
    const env: VmEnvironment = {
      qemuPath,
      qemuRelease: qemuRelease(version),
      qemuImgPath,
      kernel: options.kernel,
      restoreKernelPath: await restoreKernelStub(options.kernel.kernelPath),
      dirs,
      tcgTbSizeMB: options.tcgTbSizeMB ?? 32,
      tscKhz: options.acceleration.tscKhz,
      startTimeoutMs: options.startTimeoutMs ?? 30_000,
      perlPath,
    };
    const settings = {
      workDir: options.workDir,
      resolvConfPath: options.resolvConfPath,
      diskSizeMB: options.diskSizeMB ?? 2048,
      agentConnectTimeoutMs: options.agentConnectTimeoutMs ?? 30_000,
      bootAgentTimeoutMs: options.bootAgentTimeoutMs ?? DEFAULT_BOOT_AGENT_TIMEOUT_MS[options.acceleration.accelerator],
      imageMemoryMB: Math.floor(options.imageMemoryMB ?? DEFAULT_IMAGE_MEMORY_MB),
      imageCpuCount: Math.max(1, Math.floor(options.imageCpuCount ?? 2)),
    };
    const cpuQuotas = new CpuQuotas(options.cgroupParent === undefined ? '/ramify' : options.cgroupParent, detectCgroupLayout());
    return new MicrovmRuntime(env, settings, cpuQuotas, options.acceleration, version);
  }

  /** The machine a boot uses: the spec's resources, raised to the image minimums (see the module comment). */
  private machineFor(spec: RuntimeSandboxSpec): MachineConfig {
    return {
      accelerator: this.acceleration.accelerator,
      cpuModel: this.acceleration.cpuModel,
      cpuCount: Math.max(this.options.imageCpuCount, Math.floor(spec.resources.cpuCount)),
      memoryMB: Math.max(this.options.imageMemoryMB, Math.floor(spec.resources.memoryMB)),
    };
  }

  /** Kill the instance's QEMU processes, delete its directory and its CPU quota cgroup. */
  private async destroyInstance(sandboxId: string): Promise<void> {
    this.heldAgentSockets.release(sandboxId);
    this.bootedWithoutAgent.delete(sandboxId);
    await this.env.dirs.destroy(sandboxId);
    await this.cpuQuotas.remove(sandboxId);
  }

  /** Put a started VM under the sandbox's limits: the balloon target and the CPU quota. */
  private async applyLimits(sandboxId: string, qmp: QmpClient, pid: number, resources: SandboxResources): Promise<void> {
    await setMemoryLimit(qmp, resources.memoryMB);
    await this.cpuQuotas.apply(sandboxId, pid, resources.cpuCount);
  }

  private async requireInstance(id: string): Promise<InstanceRecord> {
    const inst = await this.env.dirs.read(id);
    if (!inst) throw new RamifyError('SANDBOX_NOT_FOUND', `the microVM runtime has no sandbox '${id}'`, { id });
    return inst;
  }

  async boot(spec: RuntimeSandboxSpec, argv: string[]): Promise<void> {
    this.starting.add(spec.sandboxId);
    try {
      await this.bootVm(spec, argv);
      this.bootedWithoutAgent.add(spec.sandboxId);
    } finally {
      this.starting.delete(spec.sandboxId);
    }
  }

  private async bootVm(spec: RuntimeSandboxSpec, argv: string[]): Promise<void> {
    const id = spec.sandboxId;
    const machine = this.machineFor(spec);
    const limits: SandboxResources = { cpuCount: spec.resources.cpuCount, memoryMB: spec.resources.memoryMB, diskSizeMB: spec.resources.diskSizeMB };
    checkMemoryLimit(limits.memoryMB, machine, `sandbox '${id}'`);
    await this.destroyInstance(id);
    const base = await ensureBaseDisk(spec.rootfsDir, { basesDir: join(this.options.workDir, 'bases'), sizeMB: this.options.diskSizeMB });
    await this.env.dirs.create(id);
    const netnsPath = spec.network.netnsPath;
    await prepareGuestLink(netnsPath);
    const addressing = await readGuestAddressing(netnsPath);
    const resolvConf = await readFile(this.options.resolvConfPath, 'utf8');
    const initrd = this.env.dirs.file(id, 'initrd');
    await composeBootInitrd(this.env.kernel.initrdPath, {
      mode: 'boot',
      hostname: spec.hostname,
      netAddress: addressing?.addressWithPrefix ?? null,
      netGateway: addressing?.gateway ?? null,
      argv,
      memoryLimitMB: limits.memoryMB < machine.memoryMB ? limits.memoryMB : null,
    }, resolvConf, initrd);
    await createOverlay(this.env.qemuImgPath, this.env.dirs.file(id, 'overlay'), { path: base.path, format: 'raw' });
    const record: InstanceRecord = { sandboxId: id, pid: 0, netnsPath, machine, limits, ram: 'shared', imageRam: null, baseDisk: base.path, hasLower: false, ready: false };
    await this.env.dirs.write(record);
    const vm = await startVm(this.env, { sandboxId: id, machine, netnsPath, ram: 'shared', ramFile: this.env.dirs.file(id, 'ram'), initrd, start: 'fresh-paused' });
    try {
      // Set before the guest runs: its balloon driver inflates as soon as the initramfs loads it and
      // /init waits for that (quietly), so the pages given up are still untouched holes of the RAM file.
      await this.applyLimits(id, vm.qmp, vm.pid, limits);
      await vm.qmp.execute('cont');
    } catch (err) {
      vm.qmp.close();
      await this.destroyInstance(id);
      await removeGuestLink(netnsPath);
      throw err;
    }
    vm.qmp.close();
    await this.env.dirs.write({ ...record, pid: vm.pid, ready: true });
  }

  /**
   * Before a create: the image's RAM bounds `memoryMB`. Rejects `VALIDATION_FAILED`. (The disk size is
   * checked by core against the image's recorded size, and again by the restore against the disk itself.)
   */
  async checkResources(resources: SandboxResources, imageDir: string): Promise<void> {
    checkMemoryLimit(resources.memoryMB, (await readImageManifest(imageDir)).machine, 'image of this template or snapshot');
  }

  /** Restore `imageDir`; an image still arriving (`options.imageArriving`) is waited for whole first. */
  async restore(spec: RuntimeSandboxSpec, imageDir: string, options: RestoreOptions = {}): Promise<void> {
    await options.imageArriving;
    this.starting.add(spec.sandboxId);
    try {
      await this.restoreVm(spec, imageDir);
    } finally {
      this.starting.delete(spec.sandboxId);
    }
  }

  private async restoreVm(spec: RuntimeSandboxSpec, imageDir: string): Promise<void> {
    const id = spec.sandboxId;
    const manifest = await readImageManifest(imageDir);
    assertSameQemu(manifest, this.env.qemuRelease, this.qemuVersion);
    if (manifest.machine.accelerator !== this.acceleration.accelerator) {
      throw new RamifyError('RUNTIME_ERROR', `image ${imageDir} was made under ${manifest.machine.accelerator.toUpperCase()}; this host runs microVMs under ${this.acceleration.accelerator.toUpperCase()}`);
    }
    if (!existsSync(manifest.baseDisk)) {
      throw new RamifyError('RUNTIME_ERROR', `image ${imageDir} needs the base disk ${manifest.baseDisk}, which is gone (rebuild the template)`);
    }
    const limits: SandboxResources = { cpuCount: spec.resources.cpuCount, memoryMB: spec.resources.memoryMB, diskSizeMB: spec.resources.diskSizeMB };
    checkMemoryLimit(limits.memoryMB, manifest.machine, `image ${imageDir}`);
    const imageDisk = join(imageDir, IMAGE_FILES.disk);
    const growDiskTo = spec.resources.diskSizeMB === null ? null : diskGrowth(spec.resources.diskSizeMB, await diskVirtualSizeBytes(this.env.qemuImgPath, imageDisk), `image ${imageDir}`);
    await this.destroyInstance(id);
    await this.env.dirs.create(id);
    const netnsPath = spec.network.netnsPath;
    await prepareGuestLink(netnsPath);
    const lower = this.env.dirs.file(id, 'lower');
    await linkOrCopy(imageDisk, lower);
    await createOverlay(this.env.qemuImgPath, this.env.dirs.file(id, 'overlay'), { path: lower, format: 'qcow2' });
    const imageRam = join(imageDir, IMAGE_FILES.ram);
    const record: InstanceRecord = { sandboxId: id, pid: 0, netnsPath, machine: manifest.machine, limits, ram: 'private', imageRam, baseDisk: manifest.baseDisk, hasLower: true, ready: false };
    await this.env.dirs.write(record);
    const vm = await startVm(this.env, { sandboxId: id, machine: manifest.machine, netnsPath, ram: 'private', ramFile: imageRam, initrd: this.env.kernel.initrdPath, start: 'incoming' });
    try {
      await this.env.dirs.write({ ...record, pid: vm.pid });
      await this.cpuQuotas.apply(id, vm.pid, limits.cpuCount);
      await this.heldAgentSockets.hold(id, this.env.dirs.file(id, 'agent'));
      await vm.qmp.execute('migrate-set-capabilities', { capabilities: [{ capability: 'x-ignore-shared', state: true }] });
      const socket = this.env.dirs.file(id, 'migrateIn');
      await vm.qmp.execute('migrate-incoming', { uri: `unix:${socket}` });
      await streamFileTo(socket, join(imageDir, IMAGE_FILES.state), 10_000);
      await waitForMigration(vm.qmp, `restoring ${imageDir}`, 120_000);
      const status = await vm.qmp.execute<{ status: string }>('query-status');
      if (status.status !== 'running') await vm.qmp.execute('cont');
      // The guest hears the new size as a config change; the agent grows the filesystem (setIdentity).
      if (growDiskTo !== null) await vm.qmp.execute('block_resize', { device: ROOT_DRIVE_ID, size: growDiskTo });
      // The balloon level is part of the loaded state: set this sandbox's own limit, and when that
      // means taking memory away, give the guest a moment to let go of it before the sandbox is used.
      await setMemoryLimit(vm.qmp, limits.memoryMB);
      if (limits.memoryMB < manifest.machine.memoryMB) await waitForMemoryLimit(vm.qmp, limits.memoryMB, { stallMs: 3000, timeoutMs: 60_000 });
      await this.env.dirs.write({ ...record, pid: vm.pid, ready: true });
    } catch (err) {
      vm.qmp.close();
      const log = tail(await readFile(this.env.dirs.file(id, 'qemuLog'), 'utf8').catch(() => ''), 4);
      await this.destroyInstance(id);
      await removeGuestLink(netnsPath);
      const message = `restore of microVM '${id}' from ${imageDir} failed: ${(err as Error).message}${log ? `\n${log}` : ''}`;
      throw new RamifyError('RUNTIME_ERROR', message, { id });
    }
    vm.qmp.close();
  }

  async checkpoint(sandboxId: string, imageDir: string): Promise<{ sizeBytes: number }> {
    const inst = await this.requireInstance(sandboxId);
    const job = checkpointInstance(this.env, inst, imageDir);
    this.inFlight.set(sandboxId, job);
    try {
      const sizeBytes = await job;
      this.heldAgentSockets.release(sandboxId);
      await this.cpuQuotas.remove(sandboxId);
      return { sizeBytes };
    } finally {
      this.inFlight.delete(sandboxId);
    }
  }

  /**
   * A fork point: the image of the running VM, which goes on running in the same QEMU process (stopped
   * only while its RAM is copied, see checkpoint.ts). The agent channel must be closed first, as for
   * {@link checkpoint}; open it again afterwards.
   */
  async checkpointKeepRunning(sandboxId: string, imageDir: string): Promise<{ sizeBytes: number }> {
    const inst = await this.requireInstance(sandboxId);
    const job = forkPointInstance(this.env, inst, imageDir);
    this.inFlight.set(sandboxId, job);
    try {
      return { sizeBytes: await job };
    } finally {
      this.inFlight.delete(sandboxId);
    }
  }

  async kill(sandboxId: string): Promise<void> {
    const inst = await this.env.dirs.read(sandboxId);
    await this.destroyInstance(sandboxId);
    if (inst) await removeGuestLink(inst.netnsPath);
  }

  /**
   * Connect to the agent's virtio-serial port through QEMU's socket and run the agent's hello/ack
   * handshake (`openVirtioChannel` of @ramify/agent), within `agentConnectTimeoutMs` (`bootAgentTimeoutMs`
   * until the agent of a freshly booted VM has answered once). QEMU serves one host at a time: close the
   * previous channel first. Rejects `AGENT_UNREACHABLE`.
   */
  async openAgentChannel(sandboxId: string): Promise<Duplex> {
    await this.requireInstance(sandboxId);
    const connected = this.heldAgentSockets.take(sandboxId);
    const booting = this.bootedWithoutAgent.has(sandboxId);
    const timeoutMs = booting ? this.options.bootAgentTimeoutMs : this.options.agentConnectTimeoutMs;
    const channel = await openVirtioChannel(this.env.dirs.file(sandboxId, 'agent'), { timeoutMs, connected });
    this.bootedWithoutAgent.delete(sandboxId);
    return channel;
  }

  async status(sandboxId: string): Promise<RuntimeInstanceStatus> {
    const inst = await this.env.dirs.read(sandboxId);
    if (!inst) return { state: 'missing' };
    const alive = inst.pid > 0 && (await isQemuOf(inst.pid, this.env.dirs.dir(sandboxId) + '/'));
    if (alive && (inst.ready || this.starting.has(sandboxId))) return { state: 'running' };
    if (alive) return { state: 'stopped', reason: 'its boot or restore was interrupted' };
    return { state: 'stopped', reason: await this.stopReason(sandboxId) };
  }

  /** Whether the instance's QEMU process still exists (reads `/proc/<pid>/cmdline`; no spawn). True when it has no record. */
  async isAlive(sandboxId: string): Promise<boolean> {
    const inst = await this.env.dirs.read(sandboxId);
    if (!inst || inst.pid <= 0) return true;
    return isQemuOf(inst.pid, this.env.dirs.dir(sandboxId) + '/');
  }

  /**
   * Counters of the instance's QEMU process (cpu-usage.ts): the instance is its pid and start time, CPU
   * time and memory from `/proc/<pid>`, disk from its overlay files' allocated bytes. Null when it has none.
   */
  async usage(sandboxId: string): Promise<RuntimeUsage | null> {
    const inst = await this.env.dirs.read(sandboxId);
    const proc = inst && inst.pid > 0 ? await processUsage(inst.pid) : null;
    if (!inst || !proc) return null;
    const diskUsedBytes = await allocatedBytes([this.env.dirs.file(sandboxId, 'overlay'), this.env.dirs.file(sandboxId, 'lower')]);
    return { instance: `qemu:${inst.pid}:${proc.startTicks}`, cpuTimeUs: proc.cpuUs, memoryUsedBytes: proc.rssBytes, memoryPeakBytes: proc.hwmBytes, diskUsedBytes };
  }

  /** `kernel panic` when the console shows one, else `exited`. */
  private async stopReason(sandboxId: string): Promise<string> {
    const consoleText = await readFile(this.env.dirs.file(sandboxId, 'console'), 'utf8').catch(() => '');
    return /Kernel panic/.test(consoleText.slice(-20_000)) ? 'kernel panic' : 'exited';
  }

  /**
   * Wait for this process's checkpoint of the sandbox, then settle one the previous daemon left: a
   * checkpoint QEMU had not finished is undone (the VM runs again if it still exists, the partial image
   * is deleted); one whose QEMU part was done has its file moves finished, so the image is complete
   * (a fork point's VM is continued first).
   */
  async settleInterrupted(sandboxId: string, timeoutMs = 60_000): Promise<void> {
    const job = this.inFlight.get(sandboxId);
    if (job) await Promise.race([job.catch(() => undefined), sleep(timeoutMs)]);
    const inst = await this.env.dirs.read(sandboxId);
    if (!inst?.checkpoint || this.inFlight.has(sandboxId)) return;
    if (inst.checkpoint.phase === 'files' && inst.checkpoint.keepRunning) await finishInterruptedForkPoint(this.env, inst);
    else if (inst.checkpoint.phase === 'files') {
      await this.env.dirs.killProcesses(sandboxId);
      await finishCheckpointFiles(this.env, inst);
      await this.cpuQuotas.remove(sandboxId);
    } else await undoCheckpoint(this.env, inst);
  }

  async list(): Promise<string[]> {
    return this.env.dirs.ids();
  }
}

