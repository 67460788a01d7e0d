/**
 * TEST DOUBLES of the Runtime, SandboxNetwork and Clock ports, plus a SnapshotStorage on a real temp
 * directory, for core's use-case tests and the daemon's HTTP-edge tests. A test that uses them covers
 * core's logic or the HTTP edge, never a real runtime.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough, type Duplex } from 'node:stream';
import { RamifyError, type AgentSession, type RuntimeName } from '@ramify/contracts';
import type { Clock } from '../ports/clock.js';
import type { NetworkAttachment, SandboxNetwork, SlotTraffic } from '../ports/network.js';
import type { RestoreOptions, Runtime, RuntimeCapabilities, RuntimeInstanceStatus, RuntimeSandboxSpec, RuntimeUsage } from '../ports/runtime.js';
import { SNAPSHOT_FORMAT_VERSION, type SnapshotManifest, type SnapshotStorage } from '../ports/snapshot-storage.js';
import { FakeAgentSession, type FakeGuestState } from './fake-agent.js';

interface FakeInstance {
  guest: FakeGuestState;
  spec: RuntimeSandboxSpec;
  sessions: FakeAgentSession[];
}

/** What the next checkpoint does: succeed, fail with the sandbox still up, or fail and kill it (as old gVisor does). */
export type FakeCheckpointBehaviour = 'ok' | 'fail-keeps-running' | 'fail-kills';

export class FakeRuntime implements Runtime {
  readonly name: RuntimeName;
  readonly capabilities: RuntimeCapabilities;
  readonly instances = new Map<string, FakeInstance>();
  readonly #channels = new WeakMap<Duplex, string>();
  /** Calls, in order (`restore sbx_1`, `checkpoint sbx_1`, ...). */
  readonly calls: string[] = [];
  nextCheckpoint: FakeCheckpointBehaviour = 'ok';
  /** Sandbox ids whose next restore fails. */
  failRestoreOf = new Set<string>();
  /** When set, every restore fails. */
  failAllRestores = false;
  /** When set, every restore refuses its spec as bad input (VALIDATION_FAILED, as a too-large memoryMB). */
  refuseAllRestores = false;
  /** Kill endpoints-check: if true, a checkpoint with connected endpoints kills the instance (like old gVisor). */
  enforceQuietNetwork = true;

  /** `name` lets a test stand one fake in for each runtime a core has (default `gvisor`). */
  constructor(capabilities: Partial<RuntimeCapabilities> = {}, name: RuntimeName = 'gvisor') {
    this.name = name;
    this.capabilities = { memorySnapshot: true, forkSharesMemory: false, checkpointNeedsQuietNetwork: true, agentChannel: 'unix-socket', rootDisk: null, oomKiller: 'agent', ...capabilities };
  }

  async boot(spec: RuntimeSandboxSpec): Promise<void> {
    this.calls.push(`boot ${spec.sandboxId}`);
    this.#starts.set(spec.sandboxId, (this.#starts.get(spec.sandboxId) ?? 0) + 1);
    this.instances.set(spec.sandboxId, { guest: { files: {}, endpoints: [], identities: [] }, spec, sessions: [] });
  }

  /** When set, `checkResources` refuses with this message (VALIDATION_FAILED), as a microVM refuses memory above its image's RAM. */
  refuseResources: string | null = null;

  async checkResources(): Promise<void> {
    if (this.refuseResources) throw new RamifyError('VALIDATION_FAILED', this.refuseResources, { field: 'memoryMB' });
  }

  /** A restore of an image still arriving waits for it whole (as the microVM runtime does), then restores. */
  async restore(spec: RuntimeSandboxSpec, imageDir: string, options: RestoreOptions = {}): Promise<void> {
    if (options.imageArriving) {
      this.calls.push(`restore ${spec.sandboxId} (image arriving)`);
      await options.imageArriving;
    }
    this.calls.push(`restore ${spec.sandboxId}`);
    if (this.refuseAllRestores) throw new RamifyError('VALIDATION_FAILED', `fake: memoryMB ${spec.resources.memoryMB} is more than the image allows`, { field: 'memoryMB' });
    if (this.failAllRestores || this.failRestoreOf.delete(spec.sandboxId)) throw new Error(`fake restore of ${spec.sandboxId} failed`);
    if (this.instances.has(spec.sandboxId)) throw new Error(`fake: ${spec.sandboxId} already exists`);
    // A new instance: its counters start from what the restore itself cost.
    this.#starts.set(spec.sandboxId, (this.#starts.get(spec.sandboxId) ?? 0) + 1);
    if (this.restoreCpuUs > 0) this.cpuUs.set(spec.sandboxId, this.restoreCpuUs);
    else this.cpuUs.delete(spec.sandboxId);
    const guest = JSON.parse(await readFile(join(imageDir, 'guest.json'), 'utf8')) as FakeGuestState;
    this.instances.set(spec.sandboxId, { guest, spec, sessions: [] });
    this.#dead.delete(spec.sandboxId);
  }

  async checkpoint(sandboxId: string, imageDir: string): Promise<{ sizeBytes: number }> {
    this.calls.push(`checkpoint ${sandboxId}`);
    const instance = this.#instance(sandboxId);
    if (instance.sessions.some((s) => !s.closed)) throw new Error('fake: checkpoint with an open agent channel');
    const behaviour = this.nextCheckpoint;
    this.nextCheckpoint = 'ok';
    if (behaviour === 'fail-kills' || (this.enforceQuietNetwork && instance.guest.endpoints.length > 0)) {
      this.instances.delete(sandboxId);
      throw new Error('fake: checkpoint refused; sandbox died');
    }
    if (behaviour === 'fail-keeps-running') throw new Error('fake: checkpoint failed');
    await mkdir(imageDir, { recursive: false });
    const body = JSON.stringify(instance.guest);
    await writeFile(join(imageDir, 'guest.json'), body);
    this.instances.delete(sandboxId);
    return { sizeBytes: Buffer.byteLength(body) };
  }

  async kill(sandboxId: string): Promise<void> {
    this.calls.push(`kill ${sandboxId}`);
    const instance = this.instances.get(sandboxId);
    instance?.sessions.forEach((s) => s.shutdown('sandbox killed'));
    this.instances.delete(sandboxId);
  }

  async openAgentChannel(sandboxId: string): Promise<Duplex> {
    const channel = new PassThrough();
    if (this.#dead.has(sandboxId)) {
      // As runsc's bridge into a dead sandbox: the channel opens, then ends before the agent answers.
      this.#deadChannels.add(channel);
      return channel;
    }
    this.#instance(sandboxId);
    this.#channels.set(channel, sandboxId);
    return channel;
  }

  /**
   * The fake `connectAgent`: a session bound to the instance the channel was opened for. As the real one's
   * first ping on a channel into a dead sandbox, it rejects AGENT_UNREACHABLE there.
   */
  connectAgent = (channel: Duplex): AgentSession => {
    if (this.#deadChannels.has(channel)) throw new RamifyError('AGENT_UNREACHABLE', 'agent channel closed: the agent ended the channel');
    const sandboxId = this.#channels.get(channel);
    if (!sandboxId) throw new Error('fake: unknown channel');
    const instance = this.#instance(sandboxId);
    const session = new FakeAgentSession(instance.guest);
    instance.sessions.push(session);
    return session;
  };

  readonly #dead = new Map<string, string>();
  readonly #deadChannels = new WeakSet<Duplex>();

  /** Make the instance stop on its own (e.g. `oom`): its agent channels drop, status says `stopped`. */
  die(sandboxId: string, reason: string): void {
    const instance = this.#instance(sandboxId);
    this.instances.delete(sandboxId);
    this.#dead.set(sandboxId, reason);
    for (const session of instance.sessions) session.shutdown(`instance died: ${reason}`);
  }

  /** CPU time used so far per sandbox by its current instance, µs, as a test sets it ({@link usage}); absent: 0. A restore resets it. */
  readonly cpuUs = new Map<string, number>();
  /** CPU time a restore leaves on the new instance's counter, µs (a real runsc restore costs about a CPU-second); default 0. */
  restoreCpuUs = 0;
  /** Memory in use per sandbox, bytes, as a test sets it; absent: 64 MiB. */
  readonly memoryUsed = new Map<string, number>();
  /** Instances started per sandbox (boots and restores): names each instance. */
  readonly #starts = new Map<string, number>();

  /** The counters a test set: the instance is `<id>#<n>` (n counts its boots and restores). */
  async usage(sandboxId: string): Promise<RuntimeUsage | null> {
    if (!this.instances.has(sandboxId)) return null;
    const used = this.memoryUsed.get(sandboxId) ?? 64 * 1024 * 1024;
    return { instance: `${sandboxId}#${this.#starts.get(sandboxId) ?? 0}`, cpuTimeUs: this.cpuUs.get(sandboxId) ?? 0, memoryUsedBytes: used, memoryPeakBytes: used, diskUsedBytes: null };
  }

  /** False once {@link die} was called for the sandbox (as the real runtimes see their processes gone). */
  async isAlive(sandboxId: string): Promise<boolean> {
    return !this.#dead.has(sandboxId);
  }

  async status(sandboxId: string): Promise<RuntimeInstanceStatus> {
    if (this.instances.has(sandboxId)) return { state: 'running' };
    const reason = this.#dead.get(sandboxId);
    return reason ? { state: 'stopped', reason } : { state: 'missing' };
  }

  async list(): Promise<string[]> {
    return [...this.instances.keys()];
  }

  async settleInterrupted(): Promise<void> {
    // The fake runs nothing outside the test process.
  }

  /** The guest state of a running fake sandbox. */
  guest(sandboxId: string): FakeGuestState {
    return this.#instance(sandboxId).guest;
  }

  #instance(sandboxId: string): FakeInstance {
    const instance = this.instances.get(sandboxId);
    if (!instance) throw new RamifyError('RUNTIME_ERROR', `fake: no instance ${sandboxId}`);
    return instance;
  }
}

/** A fake runtime that takes fork points in place (`checkpointKeepRunning`), as the microVM runtime does. */
export class FakeKeepRunningRuntime extends FakeRuntime {
  /** When set, the next fork point fails with the instance still running. */
  failNextForkPoint = false;

  async checkpointKeepRunning(sandboxId: string, imageDir: string): Promise<{ sizeBytes: number }> {
    this.calls.push(`checkpointKeepRunning ${sandboxId}`);
    const instance = this.instances.get(sandboxId);
    if (!instance) throw new RamifyError('RUNTIME_ERROR', `fake: no instance ${sandboxId}`);
    if (instance.sessions.some((s) => !s.closed)) throw new Error('fake: fork point with an open agent channel');
    if (this.failNextForkPoint) {
      this.failNextForkPoint = false;
      throw new Error('fake: fork point failed');
    }
    await mkdir(imageDir, { recursive: false });
    const body = JSON.stringify(instance.guest);
    await writeFile(join(imageDir, 'guest.json'), body);
    return { sizeBytes: Buffer.byteLength(body) };
  }
}

export class FakeNetwork implements SandboxNetwork {
  readonly attached = new Map<number, string>();
  readonly calls: string[] = [];
  /** Byte counters of each slot's link, as a test sets them; absent: none (null). */
  readonly traffic = new Map<number, SlotTraffic>();

  async trafficBytes(slot: number): Promise<SlotTraffic | null> {
    const t = this.traffic.get(slot);
    return t ? { ...t } : null;
  }

  async attach(sandboxId: string, slot: number): Promise<NetworkAttachment> {
    this.calls.push(`attach ${slot} ${sandboxId}`);
    this.attached.set(slot, sandboxId);
    return { slot, netnsPath: `/var/run/netns/fake-${slot}`, netnsName: `fake-${slot}`, guestAddress: '10.0.0.2', slotAddress: `10.200.0.${slot}` };
  }

  readonly prewarmed: number[][] = [];
  prewarm(slots: number[]): void {
    this.prewarmed.push(slots);
    for (const slot of slots) if (!this.attached.has(slot)) this.attached.set(slot, '(warm)');
  }

  /** Recorded as `prepareGuest <slot>`. */
  prepareGuest(slot: number): void {
    this.calls.push(`prepareGuest ${slot}`);
  }

  async detachIfUnused(slot: number, unused: () => Promise<boolean>): Promise<void> {
    if (await unused()) await this.detach(slot);
  }

  async detach(slot: number): Promise<void> {
    this.calls.push(`detach ${slot}`);
    this.attached.delete(slot);
  }

  async listSlots(): Promise<number[]> {
    return [...this.attached.keys()];
  }
}

/** Snapshot storage on a real directory (`<root>/<id>/image` + `<root>/<id>/manifest.json`). */
export class DirSnapshotStorage implements SnapshotStorage {
  constructor(readonly root: string) {}

  async prepare(snapshotId: string): Promise<{ imageDir: string }> {
    await mkdir(join(this.root, snapshotId), { recursive: true });
    return { imageDir: join(this.root, snapshotId, 'image') };
  }

  async commit(m: Omit<SnapshotManifest, 'formatVersion' | 'sizeBytes' | 'files' | 'createdAt'>): Promise<SnapshotManifest> {
    const imageDir = join(this.root, m.snapshotId, 'image');
    const files: SnapshotManifest['files'] = {};
    let sizeBytes = 0;
    for (const name of await readdir(imageDir)) {
      const size = (await stat(join(imageDir, name))).size;
      files[name] = { sizeBytes: size, sha256: 'not-computed-by-fake' };
      sizeBytes += size;
    }
    const manifest: SnapshotManifest = { ...m, formatVersion: SNAPSHOT_FORMAT_VERSION, createdAt: new Date().toISOString(), sizeBytes, files };
    await writeFile(join(this.root, m.snapshotId, 'manifest.json'), JSON.stringify(manifest));
    return manifest;
  }

  async open(snapshotId: string): Promise<{ imageDir: string; manifest: SnapshotManifest }> {
    const path = join(this.root, snapshotId, 'manifest.json');
    if (!existsSync(path)) throw new RamifyError('SNAPSHOT_NOT_FOUND', `snapshot '${snapshotId}' not found`);
    return { imageDir: join(this.root, snapshotId, 'image'), manifest: JSON.parse(await readFile(path, 'utf8')) as SnapshotManifest };
  }

  async remove(snapshotId: string): Promise<void> {
    await rm(join(this.root, snapshotId), { recursive: true, force: true });
  }

  async list(): Promise<string[]> {
    const entries = existsSync(this.root) ? await readdir(this.root) : [];
    return entries.filter((id) => existsSync(join(this.root, id, 'manifest.json')));
  }
}

/** A clock tests move by hand; `sleep` advances it at once. */
export class ManualClock implements Clock {
  constructor(public current = 1_700_000_000_000) {}
  now(): number {
    return this.current;
  }
  async sleep(ms: number): Promise<void> {
    this.current += Math.max(0, ms);
    await new Promise((resolve) => setImmediate(resolve));
  }
  advance(ms: number): void {
    this.current += ms;
  }
}
