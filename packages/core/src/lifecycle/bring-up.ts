/**
 * The two halves every lifecycle operation is made of:
 * - {@link bringUp}: attach the network for the sandbox's slot → enforce its egress policy and private networks while
 *   restoring an image (the slot is closed until its policy lands) → open the agent channel → give the sandbox its identity (clock, entropy, hostname, id, envs);
 * - {@link releaseResources}: close the channel, stop the runtime instance, drop the slot's private network
 *   and egress enforcement, detach the network, free the slot.
 */
import { stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { RamifyError, isRamifyError, type AgentIdentity } from '@ramify/contracts';
import { networkFor, runtimeFor, type Core } from '../context.js';
import { enforceEgressPolicy, enforceStoredEgressPolicy, releaseEgressEnforcement } from '../egress/enforcement.js';
import { DENY_ALL_EGRESS_POLICY } from '../egress/policy.js';
import { hostnameFor } from '../ids.js';
import { enforceStoredNetworks, releaseNetworkEnforcement } from '../networks/enforcement.js';
import type { SandboxRecord } from '../ports/store.js';
import { phaseTimer } from '../observe/operation.js';
import { messageOf } from './records.js';
import { bringUpsInFlight } from './bring-ups-in-flight.js';
import { flushDeferredPrewarm, isWarmSlot, prewarmFreeSlots } from './prewarm.js';

/**
 * Restore `snapshotId` into the sandbox described by `record` (which must hold a slot) and make its agent
 * usable, on the sandbox's pinned root filesystem (`record.rootfsDir`, never the template's current one).
 * On failure the half-started runtime instance is stopped (the slot and network stay; the caller decides)
 * and the error is rethrown as a RamifyError.
 * @throws RamifyError `RUNTIME_ERROR` (also when the pinned root filesystem directory is gone: nothing is
 *   started then), `SNAPSHOT_NOT_FOUND`, `AGENT_UNREACHABLE`, `RUNTIME_UNAVAILABLE`.
 */
export async function bringUp(core: Core, record: SandboxRecord, snapshotId: string, options: BringUpOptions = {}): Promise<void> {
  bringUpsInFlight.set(core, (bringUpsInFlight.get(core) ?? 0) + 1);
  try {
    await bringUpOne(core, record, snapshotId, options);
  } finally {
    const left = (bringUpsInFlight.get(core) ?? 1) - 1;
    bringUpsInFlight.set(core, left);
    if (left === 0) flushDeferredPrewarm(core);
  }
}

export interface BringUpOptions {
  /**
   * `stored` (default): the sandbox's stored egress policy and private networks; `deny-all`: no packet
   * leaves and no network is joined (a warm pool sandbox, which has no stored policy yet: its create
   * enforces the real one before it is acknowledged).
   */
  egress?: 'stored' | 'deny-all';
}

/** Bring-ups running now, per core (a fork x8 runs eight); the warm pool refills only while there are none. */
export { bringUpsInFlight };

/**
 * The bound on a restored sandbox's agent answering: `agentConnectTimeoutMs`, times the bring-ups that
 * share each of the host's cores right now (rounded up). Eight microVMs restored at once under TCG on
 * 2 cores each get a quarter of a core: measured, their agents took longer than 20 s to answer, and the
 * fork failed although nothing was wrong (bench/fork-economics). A dead instance is still noticed at
 * once by the liveness monitor.
 */
function agentTimeoutMs(core: Core): number {
  const sharing = Math.max(1, Math.ceil((bringUpsInFlight.get(core) ?? 1) / availableParallelism()));
  return core.options.agentConnectTimeoutMs * sharing;
}

async function bringUpOne(core: Core, record: SandboxRecord, snapshotId: string, options: BringUpOptions): Promise<void> {
  if (record.slot === null) throw new RamifyError('INTERNAL', `sandbox '${record.id}' has no network slot`);
  const runtime = runtimeFor(core, record.runtime);
  await assertRootfsPresent(record, snapshotId);
  const hostname = hostnameFor(record.id);
  const { mark: phase, overlap, phases } = phaseTimer();
  try {
    const network = await networkFor(core).attach(record.id, record.slot);
    phase('networkMs');
    // The policy is enforced while the image is restored: the host drops every packet of a slot it holds
    // no policy for (fail closed), and a kept slot (a resume) holds the sandbox's own, so the restored
    // processes' first packet meets the policy or nothing; both are in force before the agent is reached.
    const since = performance.now();
    const enforce = (async () => {
      if (options.egress === 'deny-all') {
        await enforceEgressPolicy(core, record, DENY_ALL_EGRESS_POLICY);
        await core.networkEnforcer?.apply(record.id, record.slot as number, []);
      } else {
        await enforceStoredEgressPolicy(core, record);
        await enforceStoredNetworks(core, record);
      }
      overlap('egressMs', since);
    })();
    const restore = (async () => {
      // With restoreWhileArriving, an image on S3 is answered once its files exist (`arriving`: their bytes
      // written and checked), and the runtime starts the instance meanwhile (docs/design/STORAGE.md,
      // "Restore while the image arrives").
      const opened: { imageDir: string; arriving?: Promise<void> } =
        core.options.restoreWhileArriving && core.storage.openArriving ? await core.storage.openArriving(snapshotId) : await core.storage.open(snapshotId);
      const { imageDir, arriving } = opened;
      // imageMs: the image at hand (a cached one checked, one on S3 downloaded and checked).
      if (arriving) void arriving.then(() => overlap('imageMs', since), () => undefined);
      else overlap('imageMs', since);
      await runtime.restore(
        { sandboxId: record.id, rootfsDir: record.rootfsDir, resources: { cpuCount: record.cpuCount, memoryMB: record.memoryMB, diskSizeMB: record.diskSizeMB }, hostname, network },
        imageDir,
        arriving ? { imageArriving: arriving } : {},
      );
      overlap('restoreMs', since);
    })();
    await Promise.all([enforce, restore]);
    phase('egressAndRestoreMs', { span: false });
    const session = await core.sessions.open(record.id, { timeoutMs: agentTimeoutMs(core) });
    phase('agentMs');
    await session.setIdentity(identityFor(core, record));
    phase('identityMs');
    core.logger.debug('sandbox up', { sandboxId: record.id, ...phases });
  } catch (err) {
    await core.sessions.drop(record.id);
    await runtime.kill(record.id).catch((killErr: unknown) => core.logger.warn('cleanup after failed restore: kill failed', { sandboxId: record.id, error: messageOf(killErr) }));
    throw wrap(err, `restoring sandbox '${record.id}' from snapshot '${snapshotId}' failed`);
  }
}

/**
 * What the agent is told after every restore: the sandbox's id, hostname, envs and metadata (written to
 * `/run/ramify/metadata.json`), the host clock, fresh entropy, and the size of its root disk when it has one (the agent grows the filesystem to fill it).
 */
export function identityFor(core: Core, record: SandboxRecord): AgentIdentity {
  const identity: AgentIdentity = {
    sandboxId: record.id, hostname: hostnameFor(record.id), envs: { ...record.envs }, metadata: { ...record.metadata }, clockMs: core.clock.now(), entropy: core.entropy(32),
  };
  if (record.diskSizeMB !== null) identity.rootDiskBytes = record.diskSizeMB * MIB;
  return identity;
}

const MIB = 1024 * 1024;

/**
 * Stop everything a sandbox holds: agent channel, runtime instance, egress enforcement, network, slot. Each step is
 * idempotent; returns the first error's message (or null) after trying every step.
 */
export async function releaseResources(core: Core, record: SandboxRecord): Promise<string | null> {
  const failures: string[] = [];
  await core.sessions.drop(record.id);
  const runtime = core.runtimes.find((r) => r.name === record.runtime);
  // The instance's last counter reading (CPU, bytes in and out): its counters go with it.
  await core.meter.beforeStop(record);
  if (runtime) await runtime.kill(record.id).catch((err: unknown) => failures.push(`runtime kill: ${messageOf(err)}`));
  if (record.slot !== null) {
    const slot = record.slot;
    const lease = (await core.store.listSlots(core.hostId)).find((l) => l.slot === slot);
    // Never detach a slot that has since been leased to another sandbox.
    if (lease === undefined || lease.sandboxId === record.id) {
      // A slot among the next ones to be handed out keeps its namespaces, ready for the next sandbox
      // (attach repairs the guest address); others are torn down.
      const keep = await isWarmSlot(core, slot, record.id);
      await releaseNetworkEnforcement(core, slot)
        .then(() => releaseEgressEnforcement(core, slot))
        // A kept slot gets back the guest address its runtime took over (queued before the slot is
        // free, so before any attach of it): the next attach has nothing left to check.
        .then(() => (keep ? core.network?.prepareGuest?.(slot) : core.network?.detach(slot)))
        .then(() => core.store.releaseSlot(record.id))
        .catch((err: unknown) => failures.push(`releasing network slot ${slot}: ${messageOf(err)}`));
    }
  }
  if (failures.length > 0) core.logger.warn('releasing sandbox resources failed', { sandboxId: record.id, failures });
  else if (record.slot !== null) prewarmFreeSlots(core);
  return failures[0] ?? null;
}

/**
 * The image is only valid on the root filesystem it was made on; gVisor would not notice another one
 * (silent corruption). So a missing pinned directory is an error, never a reason to use another.
 * @throws RamifyError `RUNTIME_ERROR` naming the directory.
 */
async function assertRootfsPresent(record: SandboxRecord, snapshotId: string): Promise<void> {
  const context = `restoring sandbox '${record.id}' from snapshot '${snapshotId}' failed`;
  if (record.rootfsDir === '') {
    throw new RamifyError(
      'RUNTIME_ERROR',
      `${context}: the sandbox has no recorded root filesystem (it predates root filesystem pinning and its template was gone when the database was upgraded)`,
      { id: record.id },
    );
  }
  const isDirectory = await stat(record.rootfsDir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!isDirectory) {
    throw new RamifyError(
      'RUNTIME_ERROR',
      `${context}: its root filesystem '${record.rootfsDir}' no longer exists; the image can only be restored on the root filesystem it was made on`,
      { id: record.id, rootfsDir: record.rootfsDir },
    );
  }
}

function wrap(err: unknown, context: string): RamifyError {
  if (isRamifyError(err)) {
    // Keep the original code (the client can act on it) but say what was being done.
    return new RamifyError(err.code, `${context}: ${err.message}`, err.details);
  }
  return new RamifyError('RUNTIME_ERROR', `${context}: ${messageOf(err)}`);
}
