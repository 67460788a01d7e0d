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
}

export class GvisorRuntime implements Runtime {
  readonly name = 'gvisor' as const;
  readonly capabilities: RuntimeCapabilities = {
    memorySnapshot: true,
    forkSharesMemory: false,
    // runsc 20221219 refuses to checkpoint with a connected TCP endpoint on the NIC, killing the sandbox.
    checkpointNeedsQuietNetwork: true,
  };
  private readonly instances = new Map<string, InstanceFile>();

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
    return new GvisorRuntime(runsc, {
      workDir: options.workDir,
      resolvConfPath: options.resolvConfPath,
      cgroupParent: options.cgroupParent === undefined ? '/ramify' : options.cgroupParent,
      bridgeArgv: options.bridgeArgv ?? DEFAULT_BRIDGE,
    }, version);
  }

  private bundleDir(id: string): string {
    return join(this.options.workDir, 'bundles', id);
  }

  private async writeBundle(spec: RuntimeSandboxSpec, argv: string[]): Promise<string> {
    const dir = this.bundleDir(spec.sandboxId);
    await mkdir(dir, { recursive: true });
    const cgroupsPath = this.options.cgroupParent ? `${this.options.cgroupParent}/${spec.sandboxId}` : null;
    const config = buildOciSpec(spec, { argv, resolvConfPath: this.options.resolvConfPath, cgroupsPath });
    const instance: InstanceFile = { netnsPath: spec.network.netnsPath };
    await writeFile(join(dir, 'config.json'), JSON.stringify(config, null, 1));
    await writeFile(join(dir, 'instance.json'), JSON.stringify(instance));
    this.instances.set(spec.sandboxId, instance);
    return dir;
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
    await this.clearStale(spec.sandboxId);
    const dir = await this.writeBundle(spec, argv);
    await this.runsc.start(spec.network.netnsPath, ['run', '-detach', '-bundle', dir, spec.sandboxId], join(dir, 'runsc.log'));
  }

  async restore(spec: RuntimeSandboxSpec, imageDir: string): Promise<void> {
    await this.clearStale(spec.sandboxId);
    const dir = await this.writeBundle(spec, ['/usr/bin/tini', '-s', '--', '/bin/true']);
    await this.runsc.start(spec.network.netnsPath, ['restore', '-detach', '-image-path', imageDir, '-bundle', dir, spec.sandboxId], join(dir, 'runsc.log'));
  }

  /** A stopped container of the same id (left by a checkpoint or a crash) blocks run/restore. */
  private async clearStale(id: string): Promise<void> {
    const r = await this.runsc.anywhere(['list', '-format', 'json']);
    const ids = r.code === 0 ? (JSON.parse(r.stdout || '[]') as Array<{ id: string }> | null ?? []).map((c) => c.id) : [];
    if (ids.includes(id)) await this.runsc.anywhere(['delete', '-force', id]);
  }

  async checkpoint(sandboxId: string, imageDir: string): Promise<{ sizeBytes: number }> {
    const inst = await this.requireInstance(sandboxId);
    await mkdir(imageDir, { recursive: true });
    const r = await this.runsc.inNetns(inst.netnsPath, ['checkpoint', '-image-path', imageDir, sandboxId]);
    if (r.code !== 0) throw new RamifyError('RUNTIME_ERROR', `runsc checkpoint failed: ${(r.stderr || r.stdout).trim()}`);
    await this.runsc.anywhere(['delete', '-force', sandboxId]);
    let sizeBytes = 0;
    for (const name of await readdir(imageDir)) sizeBytes += (await stat(join(imageDir, name))).size;
    return { sizeBytes };
  }

  async kill(sandboxId: string): Promise<void> {
    await this.runsc.anywhere(['delete', '-force', sandboxId]);
    this.instances.delete(sandboxId);
    await rm(this.bundleDir(sandboxId), { recursive: true, force: true });
  }

  async openAgentChannel(sandboxId: string): Promise<Duplex> {
    const inst = await this.requireInstance(sandboxId);
    const child = this.runsc.spawnExec(inst.netnsPath, sandboxId, this.options.bridgeArgv, ['pipe', 'pipe', 'ignore']);
    const stream = new ChildStream(child);
    child.on('error', (e) => stream.destroy(new RamifyError('AGENT_UNREACHABLE', `agent bridge failed: ${e.message}`)));
    return stream;
  }

  async status(sandboxId: string): Promise<RuntimeInstanceStatus> {
    const inst = await this.instance(sandboxId);
    if (!inst) return { state: 'missing' };
    const r = await this.runsc.inNetns(inst.netnsPath, ['state', sandboxId]);
    if (r.code !== 0) return { state: 'missing', reason: r.stderr.trim() };
    const status = (JSON.parse(r.stdout) as { status?: string }).status;
    if (status === 'running') return { state: 'running' };
    return { state: 'stopped', reason: await this.stopReason(sandboxId) };
  }

  /** `oom` when the sandbox's cgroup recorded an OOM kill, else `exited`. */
  private async stopReason(sandboxId: string): Promise<string> {
    if (!this.options.cgroupParent) return 'exited';
    for (const file of [`/sys/fs/cgroup/memory${this.options.cgroupParent}/${sandboxId}/memory.oom_control`, `/sys/fs/cgroup${this.options.cgroupParent}/${sandboxId}/memory.events`]) {
      try {
        const text = await readFile(file, 'utf8');
        if (/oom_kill [1-9]/.test(text)) return 'oom';
      } catch {
        /* no such cgroup file on this host layout */
      }
    }
    return 'exited';
  }

  async list(): Promise<string[]> {
    const fromState = await this.runsc.anywhere(['list', '-format', 'json']);
    const ids = new Set<string>();
    if (fromState.code === 0) for (const c of (JSON.parse(fromState.stdout || '[]') as Array<{ id: string }> | null) ?? []) ids.add(c.id);
    for (const name of await readdir(join(this.options.workDir, 'bundles')).catch(() => [] as string[])) ids.add(name);
    return [...ids].sort();
  }
}
