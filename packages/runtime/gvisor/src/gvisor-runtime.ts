/**
 * `GvisorRuntime`: sandboxes as gVisor (`runsc`) containers with `--overlay2=root:memory`, so file
 * changes live in the sandbox's memory and are part of every checkpoint; the template's rootfs on the
 * host stays pristine. Checkpoint stops the sandbox; restoring one image N times gives N forks.
 *
 * Per sandbox on disk: `<bundlesDir>/<id>/config.json` (OCI spec), `instance.json` (its netns, slot
 * address and agent key, so the daemon can find and reach it again after a restart) and `runsc.log`.
 * The agent channel is TCP into the sandbox's network stack, or a `runsc exec` bridge (agent-channel.ts).
 */
import { mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { bootedAgent, imageAgent, openChannel, restoredAgent, type AgentDialer, type ImageAgent, type InstanceAgent } from './agent-channel.js';
import { ChildStream } from './child-stream.js';
import { RamifyError } from '@ramify/contracts';
import type { RestoreOptions, Runtime, RuntimeCapabilities, RuntimeInstanceStatus, RuntimeSandboxSpec, RuntimeUsage } from '@ramify/core';
import { ARRIVING_RESTORE_RELEASES, feedArrivingView, makeArrivingView, PAGES_META } from './arriving-image.js';
import { assertRoomForImage } from './image-room.js';
import { cgroupCpuUsageUs, cgroupMemoryUsage } from './cpu-usage.js';
import { headroomMB } from './memory-headroom.js';
import { buildOciSpec, CPU_PERIOD_US } from './oci-spec.js';
import { cgroupCpuFiles, writeCpuQuota } from './cpu-lift.js';
import { sandboxCgroup, withCheckpointRoom, withStartRoom } from './cgroup-room.js';
import { MIN_RUNSC_RELEASE, Runsc, runscReason, runscRelease, runscVersion, type RunscPlatform } from './runsc.js';

export interface GvisorRuntimeOptions {
  /** runsc binary; default `runsc` from PATH. */
  runscPath?: string;
  /** Working directory of the runtime (runsc state, bundles, the empty shim dir). */
  workDir: string;
  /** `ptrace` here; `systrap`/`kvm` where the host supports them. Default `ptrace`. */
  platform?: RunscPlatform;
  /** Host file mounted read-only as the sandbox's /etc/resolv.conf. */
  resolvConfPath: string;
  /** Parent cgroup of every sandbox (limits enforced); null disables cgroup limits. Default `/ramify`. */
  cgroupParent?: string | null;
  /**
   * argv run inside the sandbox whose stdio becomes the agent channel. Default: socat to the agent's
   * unix socket (starts in ~30 ms; a Node bridge takes ~250 ms under gVisor's ptrace platform).
   */
  bridgeArgv?: string[];
  /**
   * Dials the agent's TCP port through a sandbox's slot address as the daemon's agent dialer (whose uid
   * alone the host firewall lets reach that port). Absent: every agent channel is a `runsc exec` bridge.
   */
  dialAgent?: AgentDialer;
  /** Told when an agent channel that could have been TCP went over the bridge, and why. */
  onAgentChannelFallback?: (sandboxId: string, reason: string) => void;
  /**
   * `runsc checkpoint -compression`: `none` (default: the memory pages go uncompressed to `pages.img`
   * beside `checkpoint.img`) or `flate-best-speed` (runsc's own default). Measured on the `base` template
   * (docs/design/RUNTIME-GVISOR.md, "Image compression"): `none` checkpoints 13 % and restores 38 % faster
   * for 27 % more disk per image, and lets the S3 tier share chunks between a parent's and its forks'
   * images (flate's output shares nothing). A restore reads either.
   */
  checkpointCompression?: 'none' | 'flate-best-speed';
}

export const DEFAULT_AGENT_SOCKET = '/run/ramify/agent.sock';
/**
 * The bridge writes its pid where the agent looks for its bridges (packages/agent/src/server/bridge-pids.ts:
 * `<socket's directory>/bridges`) before it connects, so that the agent spares it from a checkpoint's
 * freeze without reading its /proc/PID (a looked-up process that dies stays in gVisor's sentry and makes
 * every later checkpoint slower; docs/design/RUNTIME-GVISOR.md). `exec` keeps the pid; an agent too old
 * to make the directory still knows socat by its command line.
 */
const DEFAULT_BRIDGE = [
  '/bin/sh',
  '-c',
  `{ echo $$ > /run/ramify/bridges/$$; } 2>/dev/null; exec /usr/bin/socat -b 131072 STDIO UNIX-CONNECT:${DEFAULT_AGENT_SOCKET}`,
];

interface InstanceFile {
  netnsPath: string;
  /**
   * runsc's id for the current incarnation: `<sandboxId>.<n>`. Every boot/restore gets a fresh one so a
   * restore never waits for the previous incarnation's `runsc delete`, which takes ~1.5 s on this runsc
   * even for a stopped container; old incarnations are deleted in the background.
   */
  containerId: string;
  /** The sandbox's slot address (where the agent's TCP port is dialed). */
  slotAddress?: string;
  /** The incarnation's agent when it listens on TCP (its port and keys); absent: bridge only. */
  agent?: InstanceAgent;
}

/** The sandbox id of a runsc container id made by {@link GvisorRuntime}. */
const sandboxOf = (containerId: string): string => containerId.slice(0, Math.max(0, containerId.lastIndexOf('.')));

export class GvisorRuntime implements Runtime {
  readonly name = 'gvisor' as const;
  readonly capabilities: RuntimeCapabilities = {
    memorySnapshot: true,
    forkSharesMemory: false,
    // The agent also listens on TCP in the sandbox's netstack; the bridge is the fallback (agent-channel.ts).
    agentChannel: 'netstack-tcp',
    // runsc 20240729 with --net-disconnect-ok checkpoints with open TCP connections, resetting them, but a
    // server whose established connection was reset may stop accepting after a later restore (measured: an
    // asyncio server spins on ECONNABORTED): core still waits for established connections and refuses
    // with CHECKPOINT_BLOCKED. TIME_WAIT ones are reset harmlessly (docs/design/RUNTIME-GVISOR.md).
    checkpointNeedsQuietNetwork: true,
    // File changes live in the sandbox's memory overlay, within its memory limit.
    rootDisk: null,
    // gVisor has no OOM killer (the host's would take the whole sandbox): the agent's guard is it.
    oomKiller: 'agent',
  };
  /** Operator summary: the runsc version line (e.g. `runsc version 0.0~20240729.0`). */
  get summary(): string {
    return this.version;
  }
  /** Images restore only on the runsc release that made them: template images are cached per release. */
  get imageFormat(): string {
    return `runsc-${runscRelease(this.version) ?? 'unknown'}`;
  }

  private readonly instances = new Map<string, InstanceFile>();
  /** Host pid of each incarnation's `runsc-sandbox` process, by container id (for {@link isAlive}). */
  private readonly sandboxPids = new Map<string, number>();
  /** Background `runsc delete`s of old incarnations, by container id. */
  private readonly deleting = new Map<string, Promise<void>>();
  /** Checkpointed incarnations already deleted while their sandbox is paused (its instance file names them). */
  private readonly deletedAfterCheckpoint = new Set<string>();
  private generation = Date.now();

  private constructor(
    private readonly runsc: Runsc,
    private readonly options: Required<Omit<GvisorRuntimeOptions, 'runscPath' | 'platform' | 'dialAgent' | 'onAgentChannelFallback'>> &
      Pick<GvisorRuntimeOptions, 'dialAgent' | 'onAgentChannelFallback'>,
    /** `runsc --version` first line. */
    readonly version: string,
  ) {}

  /**
   * Check runsc, prepare the work directory. Rejects `RUNTIME_UNAVAILABLE` when runsc is missing or
   * older than {@link MIN_RUNSC_RELEASE} (20221219 loses a sandbox checkpointed with a TCP listener or
   * connection; see docs/design/RUNTIME-GVISOR.md).
   */
  static async open(options: GvisorRuntimeOptions): Promise<GvisorRuntime> {
    const path = options.runscPath ?? 'runsc';
    const version = await runscVersion(path);
    const release = runscRelease(version);
    if (release !== null && release < MIN_RUNSC_RELEASE) {
      throw new RamifyError(
        'RUNTIME_UNAVAILABLE',
        `${version} is too old: Ramify needs runsc ${MIN_RUNSC_RELEASE} or later (a checkpoint on older releases loses sandboxes with TCP listeners); install it with \`apt-get install -t bookworm-backports runsc\` (bash scripts/setup.sh does)`,
        { version, minRelease: MIN_RUNSC_RELEASE },
      );
    }
    const stateDir = join(options.workDir, 'state');
    const emptyDir = join(options.workDir, 'empty');
    await mkdir(stateDir, { recursive: true });
    await mkdir(emptyDir, { recursive: true });
    await mkdir(join(options.workDir, 'bundles'), { recursive: true });
    const runsc = new Runsc({ path, stateDir, emptyDir, platform: options.platform ?? 'ptrace' });
    const runtime = new GvisorRuntime(runsc, {
      workDir: options.workDir,
      resolvConfPath: options.resolvConfPath,
      cgroupParent: options.cgroupParent === undefined ? '/ramify' : options.cgroupParent,
      bridgeArgv: options.bridgeArgv ?? DEFAULT_BRIDGE,
      checkpointCompression: options.checkpointCompression ?? 'none',
      dialAgent: options.dialAgent,
      onAgentChannelFallback: options.onAgentChannelFallback,
    }, version);
    await runtime.sweepStale();
    return runtime;
  }

  /** Cgroup of one incarnation (per container id: an old incarnation's delete removes its own cgroup). */
  private cgroupPath(containerId: string): string | null {
    return this.options.cgroupParent ? `${this.options.cgroupParent}/${containerId}` : null;
  }

  private bundleDir(id: string): string {
    return join(this.options.workDir, 'bundles', id);
  }

  private async writeBundle(spec: RuntimeSandboxSpec, argv: string[], agent: InstanceAgent | undefined): Promise<{ dir: string; containerId: string }> {
    const dir = this.bundleDir(spec.sandboxId);
    await mkdir(dir, { recursive: true });
    const containerId = `${spec.sandboxId}.${(this.generation++).toString(36)}`;
    const config = buildOciSpec(spec, { argv, resolvConfPath: this.options.resolvConfPath, cgroupsPath: this.cgroupPath(containerId) });
    const instance: InstanceFile = { netnsPath: spec.network.netnsPath, containerId, slotAddress: spec.network.slotAddress, ...(agent ? { agent } : {}) };
    await writeFile(join(dir, 'config.json'), JSON.stringify(config, null, 1));
    await this.writeInstance(spec.sandboxId, instance);
    return { dir, containerId: instance.containerId };
  }

  /** Persist (and cache) the instance file: root's only, it holds the agent's key. */
  private async writeInstance(sandboxId: string, instance: InstanceFile): Promise<void> {
    await writeFile(join(this.bundleDir(sandboxId), 'instance.json'), JSON.stringify(instance), { mode: 0o600 });
    this.instances.set(sandboxId, instance);
  }

  private async instance(id: string): Promise<InstanceFile | undefined> {
    const cached = this.instances.get(id);
    if (cached) return cached;
    try {
      const parsed = JSON.parse(await readFile(join(this.bundleDir(id), 'instance.json'), 'utf8')) as InstanceFile;
      this.instances.set(id, parsed);
      return parsed;
    } catch {
      return undefined;
    }
  }

  private async requireInstance(id: string): Promise<InstanceFile> {
    const inst = await this.instance(id);
    if (!inst) throw new RamifyError('SANDBOX_NOT_FOUND', `gVisor has no sandbox '${id}'`, { id });
    return inst;
  }

  async boot(spec: RuntimeSandboxSpec, argv: string[]): Promise<void> {
    await this.retire(spec.sandboxId);
    const { dir, containerId } = await this.writeBundle(spec, argv, bootedAgent(argv));
    await this.startWithHeadroom(spec, containerId, () => this.runsc.start(spec.network.netnsPath, ['run', '-detach', '-bundle', dir, containerId], join(dir, 'runsc.log')));
  }

  /**
   * Run `start` for incarnation `containerId`; its cgroup's memory limit, `memoryMB` in the OCI spec (the
   * sandbox's `MemTotal`), is raised by the OOM guard's headroom as soon as runsc has read it, and its CPU
   * quota lifted while runsc starts it (see `cgroup-room.ts`).
   */
  private async startWithHeadroom(spec: RuntimeSandboxSpec, containerId: string, start: () => Promise<void>): Promise<void> {
    const cgroup = this.cgroupPath(containerId);
    if (!cgroup) return start();
    const limitBytes = (spec.resources.memoryMB + headroomMB(spec.resources.memoryMB)) * 1024 * 1024;
    await withStartRoom(sandboxCgroup(cgroup), { limitBytes, quotaUs: spec.resources.cpuCount * CPU_PERIOD_US, periodUs: CPU_PERIOD_US }, start);
  }

  /**
   * @throws RamifyError `IMAGE_INCOMPATIBLE` (before anything starts) when the image was made by another
   *   runsc release (gVisor's state format changes between releases), `RUNTIME_ERROR` with runsc's reason.
   */
  async restore(spec: RuntimeSandboxSpec, imageDir: string, options: RestoreOptions = {}): Promise<void> {
    if (options.imageArriving) {
      const release = runscRelease(this.version);
      if (release !== null && ARRIVING_RESTORE_RELEASES.includes(release) && (await readdir(imageDir)).includes(PAGES_META)) {
        return this.restoreArriving(spec, imageDir, options.imageArriving);
      }
      await options.imageArriving;
    }
    const stamp = await this.assertRestorable(imageDir);
    await this.retire(spec.sandboxId);
    const { dir, containerId } = await this.writeBundle(spec, RESTORE_ARGV, restoredAgent(stamp.agent));
    await this.startWithHeadroom(spec, containerId, () =>
      this.runsc.start(spec.network.netnsPath, ['restore', '-detach', '-image-path', imageDir, '-bundle', dir, containerId], join(dir, 'runsc.log')),
    );
  }

  /**
   * {@link restore} of an image still being downloaded (arriving-image.ts): runsc starts at once on a view
   * of the image whose `pages_meta.img` is a FIFO, so it creates the sandbox meanwhile and is given the
   * files only once `arriving` resolved and the image's stamp was checked. When `arriving` rejects (or the
   * stamp is another release's), runsc is fed nothing, fails, and that error is thrown instead of runsc's.
   */
  private async restoreArriving(spec: RuntimeSandboxSpec, imageDir: string, arriving: Promise<void>): Promise<void> {
    await this.retire(spec.sandboxId);
    const { dir, containerId } = await this.writeBundle(spec, RESTORE_ARGV, undefined);
    const view = join(dir, 'image-view');
    const fifo = await makeArrivingView(imageDir, view);
    if (!fifo) throw new RamifyError('INTERNAL', `image '${imageDir}' has no ${PAGES_META}`);
    try {
      await this.startWithHeadroom(spec, containerId, async () => {
        let exited = false;
        const started = this.runsc.start(spec.network.netnsPath, ['restore', '-detach', '-image-path', view, '-bundle', dir, containerId], join(dir, 'runsc.log'));
        const stopped = started.then(() => undefined, () => undefined).finally(() => (exited = true));
        const fed = (async (): Promise<void> => {
          // runsc exits before its restore call only when it failed: its own error is the answer then.
          const first = await Promise.race([arriving.then(() => this.assertRestorable(imageDir)).then((stamp) => ({ stamp }), (error: unknown) => ({ error })), stopped]);
          if (!first) return;
          if ('stamp' in first) {
            const instance = this.instances.get(spec.sandboxId);
            const agent = restoredAgent(first.stamp.agent);
            if (instance && agent) await this.writeInstance(spec.sandboxId, { ...instance, agent });
          }
          await feedArrivingView(fifo, 'stamp' in first ? join(imageDir, PAGES_META) : null, () => exited);
          if ('error' in first) throw first.error;
        })();
        const [run, feed] = await Promise.allSettled([started, fed]);
        if (feed.status === 'rejected') throw feed.reason;
        if (run.status === 'rejected') throw run.reason;
      });
    } finally {
      await rm(view, { recursive: true, force: true });
    }
  }

  /** The image's stamp ({@link IMAGE_STAMP}); refuses one that names another runsc release than this host's. */
  private async assertRestorable(imageDir: string): Promise<ImageStamp> {
    const stamp = await readFile(join(imageDir, IMAGE_STAMP), 'utf8').then(
      (text) => JSON.parse(text) as Partial<ImageStamp>,
      () => null,
    );
    if (stamp?.runsc === this.version) return { runsc: stamp.runsc, ...(stamp.agent ? { agent: stamp.agent } : {}) };
    const madeBy = stamp?.runsc ?? 'runsc 20221219 or earlier (an image without a release stamp)';
    throw new RamifyError(
      'IMAGE_INCOMPATIBLE',
      `this image was made by ${madeBy} and this host runs ${this.version}, which cannot restore it (gVisor's checkpoint format changes between releases): rebuild a template image with \`ramify template build <spec>\`; a paused sandbox resumes on a host with its runsc release (the image is kept)`,
      { imageRuntime: stamp?.runsc ?? null, hostRuntime: this.version },
    );
  }

  /** Delete the sandbox's current incarnation (if any) in the background, unless its checkpoint did already. */
  private async retire(sandboxId: string): Promise<void> {
    const current = await this.instance(sandboxId);
    if (!current) return;
    // A resume after a pause: the checkpoint's delete ran (a second `runsc delete` would only compete with the restore).
    if (this.deletedAfterCheckpoint.delete(current.containerId)) return;
    this.deleteLater(current.containerId);
  }

  /**
   * `runsc delete -force` of `containerId` in the background. `afterCheckpoint`: its instance file still
   * names it (a paused sandbox), so remember it is gone for {@link retire}.
   */
  private deleteLater(containerId: string, afterCheckpoint = false): void {
    this.sandboxPids.delete(containerId);
    if (this.deleting.has(containerId)) return;
    const done = this.runsc
      .anywhere(['delete', '-force', containerId])
      .then((r) => {
        if (afterCheckpoint && r.code === 0) this.deletedAfterCheckpoint.add(containerId);
      }, () => undefined)
      .finally(() => this.deleting.delete(containerId));
    this.deleting.set(containerId, done);
  }

  /** Wait for every background deletion (tests, shutdown). */
  async settle(): Promise<void> {
    while (this.deleting.size > 0) await Promise.all([...this.deleting.values()]);
  }

  /**
   * Delete runsc containers that are no sandbox's current incarnation (left by a crash), in the background;
   * put the CPU quota of the current ones back (a crash while runsc started one left it lifted).
   */
  async sweepStale(): Promise<string[]> {
    const stale: string[] = [];
    for (const containerId of await this.containerIds()) {
      const inst = await this.instance(sandboxOf(containerId));
      if (!inst || inst.containerId !== containerId) {
        stale.push(containerId);
        this.deleteLater(containerId);
      } else await this.putBackCpuQuota(sandboxOf(containerId), containerId);
    }
    return stale;
  }

  /**
   * Write the CPU quota of the incarnation's spec into its cgroup again: a daemon killed while runsc started
   * it left the quota lifted (cgroup-room.ts). A no-op without a cgroup or a readable spec.
   */
  private async putBackCpuQuota(sandboxId: string, containerId: string): Promise<void> {
    const cgroup = this.cgroupPath(containerId);
    if (!cgroup) return;
    const config = await readFile(join(this.bundleDir(sandboxId), 'config.json'), 'utf8').then((t) => JSON.parse(t) as { linux?: { resources?: { cpu?: { quota?: number; period?: number } } } }, () => null);
    const cpu = config?.linux?.resources?.cpu;
    if (typeof cpu?.quota !== 'number' || typeof cpu.period !== 'number') return;
    await writeCpuQuota(cgroupCpuFiles(cgroup), cpu.quota, cpu.period);
  }

  private async containerIds(): Promise<string[]> {
    const r = await this.runsc.anywhere(['list', '-format', 'json']);
    if (r.code !== 0) return [];
    return ((JSON.parse(r.stdout || '[]') as Array<{ id: string }> | null) ?? []).map((c) => c.id);
  }

  /** runsc's container id of the sandbox's current incarnation (for raw `runsc` calls in benches and debugging). */
  async containerOf(sandboxId: string): Promise<string> {
    return (await this.requireInstance(sandboxId)).containerId;
  }

  async checkpoint(sandboxId: string, imageDir: string): Promise<{ sizeBytes: number }> {
    const inst = await this.requireInstance(sandboxId);
    await mkdir(imageDir, { recursive: true });
    // Stamped first: a checkpoint outlives a daemon killed meanwhile, and reconcile commits what it wrote.
    const stamp: ImageStamp = { runsc: this.version, ...(inst.agent ? { agent: imageAgent(inst.agent) } : {}) };
    await writeFile(join(imageDir, IMAGE_STAMP), JSON.stringify(stamp), { mode: 0o600 });
    const cgroup = this.cgroupPath(inst.containerId);
    await assertRoomForImage(imageDir, cgroup ? (await cgroupMemoryUsage(cgroup)).usedBytes : null);
    const checkpoint = async (): Promise<void> => {
      const r = await this.runsc.inNetns(inst.netnsPath, ['checkpoint', '-compression', this.options.checkpointCompression, '-image-path', imageDir, inst.containerId]);
      if (r.code !== 0) throw new RamifyError('RUNTIME_ERROR', `runsc checkpoint failed: ${runscReason(`${r.stderr}\n${r.stdout}`)}`, { runtimeReason: runscReason(`${r.stderr}\n${r.stdout}`) });
    };
    // Room for the sentry's own encoding of the sandbox's kernel: memory, CPU (see cgroup-room.ts).
    await (cgroup ? withCheckpointRoom(sandboxCgroup(cgroup), checkpoint) : checkpoint());
    // The checkpointed container is stopped; deleting it takes ~1.5 s, so it happens in the background.
    this.deleteLater(inst.containerId, true);
    let sizeBytes = 0;
    for (const name of await readdir(imageDir)) sizeBytes += (await stat(join(imageDir, name))).size;
    return { sizeBytes };
  }

  async kill(sandboxId: string): Promise<void> {
    const inst = await this.instance(sandboxId);
    // Paused, its incarnation already deleted after the checkpoint: nothing runs.
    if (inst && !this.deletedAfterCheckpoint.delete(inst.containerId)) {
      // SIGKILL every process now (fast), then delete the container in the background.
      await this.runsc.inNetns(inst.netnsPath, ['kill', '-all', inst.containerId, 'KILL']);
      this.deleteLater(inst.containerId);
    }
    this.instances.delete(sandboxId);
    await rm(this.bundleDir(sandboxId), { recursive: true, force: true });
  }

  /**
   * A byte stream to the agent: TCP to the slot address with the channel hello, or a `runsc exec` bridge
   * (agent-channel.ts). @throws RamifyError `AGENT_UNREACHABLE` when the bridge's hello gets no answer.
   */
  async openAgentChannel(sandboxId: string): Promise<Duplex> {
    const inst = await this.requireInstance(sandboxId);
    const bridge = (): Duplex => {
      const child = this.runsc.spawnExec(inst.netnsPath, inst.containerId, this.options.bridgeArgv, ['pipe', 'pipe', 'ignore']);
      const stream = new ChildStream(child);
      child.on('error', (e) => stream.destroy(new RamifyError('AGENT_UNREACHABLE', `agent bridge failed: ${e.message}`)));
      return stream;
    };
    const onFallback = this.options.onAgentChannelFallback;
    return openChannel(inst.slotAddress ?? '', inst.agent, {
      ...(inst.slotAddress !== undefined && this.options.dialAgent ? { dial: this.options.dialAgent } : {}),
      bridge,
      persist: () => this.writeInstance(sandboxId, inst),
      ...(onFallback ? { onFallback: (reason: string) => onFallback(sandboxId, reason) } : {}),
    });
  }

  async status(sandboxId: string): Promise<RuntimeInstanceStatus> {
    const inst = await this.instance(sandboxId);
    if (!inst) return { state: 'missing' };
    const r = await this.runsc.inNetns(inst.netnsPath, ['state', inst.containerId]);
    if (r.code !== 0) return { state: 'missing', reason: r.stderr.trim() };
    const { status, pid } = JSON.parse(r.stdout) as { status?: string; pid?: number };
    // runsc says `running` for a sandbox process that was killed but not yet reaped (a zombie).
    if (status === 'running' && (!pid || (await processLives(pid, inst.containerId)))) {
      if (pid) this.sandboxPids.set(inst.containerId, pid);
      return { state: 'running' };
    }
    return { state: 'stopped', reason: await this.stopReason(inst.containerId) };
  }

  /**
   * Whether the current incarnation's `runsc-sandbox` process (gVisor's kernel: every process of the
   * sandbox lives in it) still exists. The first call per incarnation asks `runsc state` for its pid;
   * later calls read `/proc/<pid>/stat` (no spawn). True when unsure.
   */
  async isAlive(sandboxId: string): Promise<boolean> {
    const inst = await this.instance(sandboxId);
    if (!inst) return true;
    let pid = this.sandboxPids.get(inst.containerId);
    if (pid === undefined) {
      if ((await this.status(sandboxId)).state !== 'running') return false;
      pid = this.sandboxPids.get(inst.containerId);
      if (pid === undefined) return true;
    }
    return processLives(pid, inst.containerId);
  }

  /**
   * Counters of the current incarnation (the instance is its container id) from its cgroup: CPU time and
   * memory (cpu-usage.ts); no disk of its own. Null without cgroups, an instance or a readable CPU figure.
   */
  async usage(sandboxId: string): Promise<RuntimeUsage | null> {
    const inst = await this.instance(sandboxId);
    const cgroup = inst ? this.cgroupPath(inst.containerId) : null;
    if (!inst || !cgroup) return null;
    const [cpuTimeUs, memory] = await Promise.all([cgroupCpuUsageUs(cgroup), cgroupMemoryUsage(cgroup)]);
    if (cpuTimeUs === null) return null;
    return { instance: inst.containerId, cpuTimeUs, memoryUsedBytes: memory.usedBytes, memoryPeakBytes: memory.peakBytes, diskUsedBytes: null };
  }

  /** `oom` when the sandbox's cgroup recorded an OOM kill, else `exited`. */
  private async stopReason(containerId: string): Promise<string> {
    const cgroup = this.cgroupPath(containerId);
    if (!cgroup) return 'exited';
    for (const file of [`/sys/fs/cgroup/memory${cgroup}/memory.oom_control`, `/sys/fs/cgroup${cgroup}/memory.events`]) {
      try {
        const text = await readFile(file, 'utf8');
        if (/oom_kill [1-9]/.test(text)) return 'oom';
      } catch {
        /* no such cgroup file on this host layout */
      }
    }
    return 'exited';
  }

  /**
   * Wait until no `runsc` command (checkpoint, restore, run, delete, ...) on one of this sandbox's
   * incarnations is running, at most `timeoutMs` (default 60 s). Such commands outlive a killed daemon.
   */
  async settleInterrupted(sandboxId: string, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ((await this.runscCommandsOn(sandboxId)) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  }

  /** Count `runsc` command processes (not the sandbox's own runsc-sandbox/runsc-gofer) naming an incarnation of `sandboxId`. */
  private async runscCommandsOn(sandboxId: string): Promise<number> {
    const stateDir = join(this.options.workDir, 'state');
    let count = 0;
    for (const pid of await readdir('/proc').catch(() => [] as string[])) {
      if (!/^\d+$/.test(pid)) continue;
      const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
      if (!argv[0] || !/(^|\/)runsc$/.test(argv[0])) continue;
      if (!argv.includes(stateDir)) continue;
      if (argv.some((a) => a.startsWith(`${sandboxId}.`))) count++;
    }
    return count;
  }

  async list(): Promise<string[]> {
    const ids = new Set<string>();
    for (const name of await readdir(join(this.options.workDir, 'bundles')).catch(() => [] as string[])) ids.add(name);
    return [...ids].sort();
  }
}

/** Whether host process `pid` exists, is not a zombie, and is still `containerId`'s (its pid not reused). */
async function processLives(pid: number, containerId: string): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (stat === null || /^\d+ \(.*\) Z/.test(stat)) return false;
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  return cmdline.includes(containerId);
}

/**
 * File in every image naming the runsc release that made it (`{"runsc": "runsc version 0.0~20240729.0"}`)
 * and, when its agent listens on TCP, the port and the keys it may hold (`agent`).
 */
const IMAGE_STAMP = 'ramify-runsc.json';

/** The init of a restored container's spec (runsc needs one; the image's processes are what runs). */
const RESTORE_ARGV = ['/usr/bin/tini', '-s', '--', '/bin/true'];

interface ImageStamp {
  runsc: string;
  agent?: ImageAgent;
}
