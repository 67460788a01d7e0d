/**
 * `GvisorRuntime`: sandboxes as gVisor (`runsc`) containers with `--overlay2=root:memory`, so file
 * changes live in the sandbox's memory and are part of every checkpoint; the template's rootfs on the
 * host stays pristine. Checkpoint stops the sandbox; restoring one image N times gives N forks.
 *
 * Per sandbox on disk: `<bundlesDir>/<id>/config.json` (OCI spec), `instance.json` (its netns, so the
 * daemon can find it again after a restart) and `runsc.log`.
 */
import { mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { ChildStream } from './child-stream.js';
import { RamifyError } from '@ramify/contracts';
import type { Runtime, RuntimeCapabilities, RuntimeInstanceStatus, RuntimeSandboxSpec } from '@ramify/core';
import { buildOciSpec } from './oci-spec.js';
import { Runsc, needsNetnsShim, runscVersion, type RunscPlatform } from './runsc.js';

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
}

export const DEFAULT_AGENT_SOCKET = '/run/ramify/agent.sock';
const DEFAULT_BRIDGE = ['/usr/bin/socat', '-b', '131072', 'STDIO', `UNIX-CONNECT:${DEFAULT_AGENT_SOCKET}`];

interface InstanceFile {
  netnsPath: string;
  /**
   * runsc's id for the current incarnation: `<sandboxId>.<n>`. Every boot/restore gets a fresh one so a
   * restore never waits for the previous incarnation's `runsc delete`, which takes ~1.5 s on this runsc
   * even for a stopped container; old incarnations are deleted in the background.
   */
  containerId: string;
}

/** The sandbox id of a runsc container id made by {@link GvisorRuntime}. */
const sandboxOf = (containerId: string): string => containerId.slice(0, Math.max(0, containerId.lastIndexOf('.')));

export class GvisorRuntime implements Runtime {
  readonly name = 'gvisor' as const;
  readonly capabilities: RuntimeCapabilities = {
    memorySnapshot: true,
    forkSharesMemory: false,
    agentChannel: 'unix-socket',
    // runsc 20221219 refuses to checkpoint with a connected TCP endpoint on the NIC, killing the sandbox.
    checkpointNeedsQuietNetwork: true,
    // File changes live in the sandbox's memory overlay, within its memory limit.
    rootDisk: null,
  };
  /** Operator summary: the runsc version line (e.g. `runsc version 0.0~20221219.0`). */
  get summary(): string {
    return this.version;
  }

  private readonly instances = new Map<string, InstanceFile>();
  /** Background `runsc delete`s of old incarnations, by container id. */
  private readonly deleting = new Map<string, Promise<void>>();
  private generation = Date.now();

  private constructor(
    private readonly runsc: Runsc,
    private readonly options: Required<Omit<GvisorRuntimeOptions, 'runscPath' | 'platform'>>,
    /** `runsc --version` first line. */
    readonly version: string,
  ) {}

  /** Check runsc, prepare the work directory. Rejects `RUNTIME_UNAVAILABLE` when runsc is missing. */
  static async open(options: GvisorRuntimeOptions): Promise<GvisorRuntime> {
    const path = options.runscPath ?? 'runsc';
    const version = await runscVersion(path);
    const stateDir = join(options.workDir, 'state');
    const emptyDir = join(options.workDir, 'empty');
    await mkdir(stateDir, { recursive: true });
    await mkdir(emptyDir, { recursive: true });
    await mkdir(join(options.workDir, 'bundles'), { recursive: true });
    const runsc = new Runsc({ path, stateDir, emptyDir, platform: options.platform ?? 'ptrace', netnsShim: needsNetnsShim(version) });
    const runtime = new GvisorRuntime(runsc, {
      workDir: options.workDir,
      resolvConfPath: options.resolvConfPath,
      cgroupParent: options.cgroupParent === undefined ? '/ramify' : options.cgroupParent,
      bridgeArgv: options.bridgeArgv ?? DEFAULT_BRIDGE,
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

  private async writeBundle(spec: RuntimeSandboxSpec, argv: string[]): Promise<{ dir: string; containerId: string }> {
    const dir = this.bundleDir(spec.sandboxId);
    await mkdir(dir, { recursive: true });
    const containerId = `${spec.sandboxId}.${(this.generation++).toString(36)}`;
    const config = buildOciSpec(spec, { argv, resolvConfPath: this.options.resolvConfPath, cgroupsPath: this.cgroupPath(containerId) });
    const instance: InstanceFile = { netnsPath: spec.network.netnsPath, containerId };
    await writeFile(join(dir, 'config.json'), JSON.stringify(config, null, 1));
    await writeFile(join(dir, 'instance.json'), JSON.stringify(instance));
    this.instances.set(spec.sandboxId, instance);
    return { dir, containerId: instance.containerId };
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
    const { dir, containerId } = await this.writeBundle(spec, argv);
    await this.runsc.start(spec.network.netnsPath, ['run', '-detach', '-bundle', dir, containerId], join(dir, 'runsc.log'));
  }

  async restore(spec: RuntimeSandboxSpec, imageDir: string): Promise<void> {
    await this.retire(spec.sandboxId);
    const { dir, containerId } = await this.writeBundle(spec, ['/usr/bin/tini', '-s', '--', '/bin/true']);
    await this.runsc.start(spec.network.netnsPath, ['restore', '-detach', '-image-path', imageDir, '-bundle', dir, containerId], join(dir, 'runsc.log'));
  }

  /** Delete the sandbox's current incarnation (if any) in the background. */
  private async retire(sandboxId: string): Promise<void> {
    const current = await this.instance(sandboxId);
    if (current) this.deleteLater(current.containerId);
  }

  private deleteLater(containerId: string): void {
    if (this.deleting.has(containerId)) return;
    const done = this.runsc
      .anywhere(['delete', '-force', containerId])
      .then(() => undefined, () => undefined)
      .finally(() => this.deleting.delete(containerId));
    this.deleting.set(containerId, done);
  }

  /** Wait for every background deletion (tests, shutdown). */
  async settle(): Promise<void> {
    while (this.deleting.size > 0) await Promise.all([...this.deleting.values()]);
  }

  /** Delete runsc containers that are no sandbox's current incarnation (left by a crash), in the background. */
  async sweepStale(): Promise<string[]> {
    const stale: string[] = [];
    for (const containerId of await this.containerIds()) {
      const inst = await this.instance(sandboxOf(containerId));
      if (!inst || inst.containerId !== containerId) {
        stale.push(containerId);
        this.deleteLater(containerId);
      }
    }
    return stale;
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
    const r = await this.runsc.inNetns(inst.netnsPath, ['checkpoint', '-image-path', imageDir, inst.containerId]);
    if (r.code !== 0) throw new RamifyError('RUNTIME_ERROR', `runsc checkpoint failed: ${checkpointFailure(r.stderr || r.stdout)}`);
    // The checkpointed container is stopped; deleting it takes ~1.5 s, so it happens in the background.
    this.deleteLater(inst.containerId);
    let sizeBytes = 0;
    for (const name of await readdir(imageDir)) sizeBytes += (await stat(join(imageDir, name))).size;
    return { sizeBytes };
  }

  async kill(sandboxId: string): Promise<void> {
    const inst = await this.instance(sandboxId);
    if (inst) {
      // SIGKILL every process now (fast), then delete the container in the background.
      await this.runsc.inNetns(inst.netnsPath, ['kill', '-all', inst.containerId, 'KILL']);
      this.deleteLater(inst.containerId);
    }
    this.instances.delete(sandboxId);
    await rm(this.bundleDir(sandboxId), { recursive: true, force: true });
  }

  async openAgentChannel(sandboxId: string): Promise<Duplex> {
    const inst = await this.requireInstance(sandboxId);
    const child = this.runsc.spawnExec(inst.netnsPath, inst.containerId, this.options.bridgeArgv, ['pipe', 'pipe', 'ignore']);
    const stream = new ChildStream(child);
    child.on('error', (e) => stream.destroy(new RamifyError('AGENT_UNREACHABLE', `agent bridge failed: ${e.message}`)));
    return stream;
  }

  async status(sandboxId: string): Promise<RuntimeInstanceStatus> {
    const inst = await this.instance(sandboxId);
    if (!inst) return { state: 'missing' };
    const r = await this.runsc.inNetns(inst.netnsPath, ['state', inst.containerId]);
    if (r.code !== 0) return { state: 'missing', reason: r.stderr.trim() };
    const status = (JSON.parse(r.stdout) as { status?: string }).status;
    if (status === 'running') return { state: 'running' };
    return { state: 'stopped', reason: await this.stopReason(inst.containerId) };
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

/**
 * The reason of a failed `runsc checkpoint`: for an open TCP connection (which this runsc cannot save;
 * its output is a Go panic with a struct dump of the endpoint), the connection's addresses; else the
 * first line that says what failed.
 */
export function checkpointFailure(text: string): string {
  const open = /endpoint cannot be saved in connected state: local (\S+?), remote (\S+?):?\s*$/m.exec(text);
  if (open) return `a TCP connection was open (local ${open[1]}, remote ${open[2]}; gVisor cannot checkpoint an open non-loopback connection, one in TIME_WAIT included)`;
  return firstLine(text);
}

const firstLine = (text: string): string => {
  const lines = text.trim().split('\n');
  // runsc prints a Go panic with a huge struct dump after the one line that matters.
  return (lines.find((l) => /failed|error/i.test(l)) ?? lines[0] ?? '').slice(0, 500);
};
