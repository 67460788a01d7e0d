/**
 * The host role's membership in the host registry (docs/design/SCALE-OUT.md): register (after reconcile,
 * once the API listener answers), heartbeat every {@link HEARTBEAT_MS} with a {@link LEASE_MS} lease, and
 * drain. A heartbeat answered `HOST_LOST` (the lease expired and the sweep wrote this host off while it
 * was alive, e.g. a network partition) reconciles against the store again before registering anew, so a
 * returning host kills runtime leftovers of sandboxes no longer its own before it takes work.
 */
import { availableParallelism, totalmem } from 'node:os';
import { MAX_CLOCK_SKEW_MS, pauseSandbox, reconcile, type Core, type HostCapacity, type HostLoad, type HostRecord } from '@ramify/core';
import { isRamifyError } from '@ramify/contracts';
import { MAX_SLOT } from '@ramify/network';

/** The lease each registration or heartbeat takes (ms): a host silent this long is lost. */
export const LEASE_MS = 10_000;
/** Between heartbeats (ms): three fit in a lease, so one lost heartbeat costs nothing. */
export const HEARTBEAT_MS = 3_000;
/** vCPUs offered per host CPU: sandboxes share CPU time (gVisor and QEMU threads are scheduled, not pinned). */
export const CPU_OVERCOMMIT = 4;

/** What a host offers by default: its memory, its CPUs × {@link CPU_OVERCOMMIT}, its address plan's slots. */
export function defaultCapacity(): HostCapacity {
  return { memoryMB: Math.floor(totalmem() / 1048576), cpus: availableParallelism() * CPU_OVERCOMMIT, slots: MAX_SLOT };
}

/** The storage's local view: images cached here, and those not yet durable in the bucket. */
interface LocalImages {
  cachedImageIds: string[];
  pendingUploadIds: string[];
}

export interface HostAgentOptions {
  advertiseUrl: string;
  /** `host:port` the ingress listener and SSH gateway listen on (see {@link edgeAddress}); absent: none runs here. */
  ingressListen?: string;
  sshListen?: string;
  capacity?: HostCapacity;
  leaseMs?: number;
  heartbeatMs?: number;
}

export interface HostAgent {
  /** The registry's row as last written. */
  readonly record: HostRecord;
  /**
   * Drain: `draining` (placement skips this host), pause every running sandbox here (so it can resume on
   * another host once its image is durable), wait for uploads (at most `uploadWaitMs`), then `gone`.
   */
  drain(options?: { uploadWaitMs?: number }): Promise<{ paused: string[]; failed: string[]; uploadsDone: boolean }>;
  /** Stop heartbeating (the lease then runs out unless the host drained). */
  stop(): void;
}

/**
 * Where API processes reach a listener of this host: its listen address, or for a wildcard (`0.0.0.0`, `::`)
 * or loopback listen address the advertise URL's host name with the listen port. `listen` is `host:port`.
 */
export function edgeAddress(listen: string, advertiseUrl: string): string {
  const colon = listen.lastIndexOf(':');
  const host = listen.slice(0, colon);
  const port = listen.slice(colon + 1);
  const local = host === '0.0.0.0' || host === '::' || host === '' || host.startsWith('127.') || host === '::1';
  if (!local) return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return `${new URL(advertiseUrl).hostname}:${port}`;
}

/** Register `core`'s host and start heartbeating. @throws RamifyError HOST_CLOCK_SKEW. */
export async function startHostAgent(core: Core, options: HostAgentOptions): Promise<HostAgent> {
  const leaseMs = options.leaseMs ?? LEASE_MS;
  const capacity = options.capacity ?? defaultCapacity();
  const register = async (): Promise<HostRecord> => core.store.registerHost({
    id: core.hostId, url: options.advertiseUrl, capacity, ...(await localImages(core)),
    ...(options.ingressListen ? { ingressAddress: edgeAddress(options.ingressListen, options.advertiseUrl) } : {}),
    ...(options.sshListen ? { sshAddress: edgeAddress(options.sshListen, options.advertiseUrl) } : {}), hostNowMs: core.clock.now(), leaseMs, maxClockSkewMs: MAX_CLOCK_SKEW_MS,
  });
  let record = await register();
  let beating: Promise<void> = Promise.resolve();
  const beat = async (): Promise<void> => {
    try {
      record = await core.store.heartbeatHost(core.hostId, { load: await loadOf(core), ...(await localImages(core)), leaseMs });
    } catch (err) {
      if (!isRamifyError(err) || err.code !== 'HOST_LOST' || record.state === 'draining') throw err;
      core.logger.warn('this host was written off (its lease expired): reconciling against the store before registering again', { hostId: core.hostId });
      await reconcile(core);
      record = await register();
    }
  };
  const timer = setInterval(() => {
    beating = beat().catch((err: unknown) => core.logger.warn('heartbeat failed', { hostId: core.hostId, error: err instanceof Error ? err.message : String(err) }));
  }, options.heartbeatMs ?? HEARTBEAT_MS);
  timer.unref();
  const stop = (): void => clearInterval(timer);
  return {
    get record() {
      return record;
    },
    stop,
    drain: async ({ uploadWaitMs = 600_000 } = {}) => {
      record = await core.store.setHostState(core.hostId, 'draining');
      const paused: string[] = [];
      const failed: string[] = [];
      for (const id of await runningHere(core)) {
        try {
          await pauseSandbox(core, id);
          paused.push(id);
        } catch (err) {
          failed.push(id);
          core.logger.warn('drain: could not pause a sandbox; it stays running here', { sandboxId: id, error: err instanceof Error ? err.message : String(err) });
        }
      }
      const uploadsDone = await waitForUploads(core, uploadWaitMs);
      // The final heartbeat tells placement which images are still only here.
      await beating;
      stop();
      record = await core.store.heartbeatHost(core.hostId, { load: await loadOf(core), ...(await localImages(core)), leaseMs }).catch(() => record);
      record = await core.store.setHostState(core.hostId, 'gone');
      return { paused, failed, uploadsDone };
    },
  };
}

async function runningHere(core: Core): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await core.store.listSandboxes({ states: ['running'], hostId: core.hostId, limit: 500, ...(cursor ? { cursor } : {}) });
    ids.push(...page.sandboxes.map((s) => s.id));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return ids;
}

async function loadOf(core: Core): Promise<HostLoad> {
  const page = await core.store.listSandboxes({ states: ['running'], hostId: core.hostId, limit: 1000 });
  return { runningSandboxes: page.sandboxes.length, memoryReservedMB: page.sandboxes.reduce((sum, s) => sum + s.memoryMB, 0) };
}

/** Images in this host's cache, and those of them not yet durable (storage without a remote tier: none pending). */
async function localImages(core: Core): Promise<LocalImages> {
  const storage = core.storage as typeof core.storage & { local?: { list(): Promise<string[]> } };
  const cachedImageIds = storage.local ? await storage.local.list() : await core.storage.list();
  const pendingUploadIds: string[] = [];
  if (core.storage.uploadState) {
    for (const id of cachedImageIds) {
      const state = await core.storage.uploadState(id).catch(() => null);
      if (state && state.state !== 'durable') pendingUploadIds.push(id);
    }
  }
  return { cachedImageIds, pendingUploadIds };
}

async function waitForUploads(core: Core, limitMs: number): Promise<boolean> {
  for (const deadline = Date.now() + limitMs; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
    if ((await localImages(core)).pendingUploadIds.length === 0) return true;
  }
  return false;
}
