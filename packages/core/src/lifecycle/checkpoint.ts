/**
 * Checkpointing a running sandbox into a new snapshot, the shared first half of pause, fork-of-running
 * and snapshot-of-running. Order (each write persisted before the next step acts):
 * snapshot row `pending` → `running → pausing` with the operation → quiesce (one agent call when no
 * connection is open; else back to `running` while connections drain, then again) → close the agent
 * channel → runtime checkpoint → commit the image → snapshot `ready` → `pausing → paused`.
 *
 * Failure handling, so that pause never kills a sandbox:
 * - network still busy (`CHECKPOINT_BLOCKED`) or agent unreachable before the checkpoint: back to
 *   `running`, channel untouched;
 * - the runtime's checkpoint fails and the instance is still running: back to `running`, channel reopened;
 * - it fails and the instance is gone (the runtime stopped it, e.g. runsc on a full disk): restored from
 *   the image it was last started from (`sourceSnapshotId`; its changes since are lost, the error says so),
 *   `error` only when that restore fails too.
 */
import { RamifyError, isRamifyError } from '@ramify/contracts';
import { runtimeFor, type Core } from '../context.js';
import { newSnapshotId } from '../ids.js';
import { storedEgressPolicy } from '../egress/get-egress.js';
import { copyIngress } from '../ingress/ports.js';
import { recordedNetworks } from '../networks/enforcement.js';
import type { Runtime } from '../ports/runtime.js';
import type { SandboxOperation, SandboxRecord, SnapshotRecord } from '../ports/store.js';
import { bringUp, identityFor } from './bring-up.js';
import { waitForNoConnections, waitForQuietNetwork } from './quiet-network.js';
import { phaseTimer } from '../observe/operation.js';
import { messageOf, transition } from './records.js';

export interface CheckpointPlan {
  kind: SnapshotRecord['kind'];
  /** Unique snapshot name (named snapshots). */
  name?: string;
  /** The operation persisted together with `pausing`; it must name the snapshot id it is given. */
  operation: (snapshotId: string) => SandboxOperation;
  /** Leave the operation on the record once paused (the caller continues: fork, snapshot); else clear it. */
  afterwards: 'operation-continues' | 'operation-done';
}

/**
 * Checkpoint the running sandbox `record` per `plan`. Caller holds the sandbox's lock.
 * @returns the record (now `paused`, `pausedSnapshotId` = the new snapshot, timeout clock stopped) and the ready snapshot.
 * @throws RamifyError `INVALID_STATE` (not running), `CONFLICT` (name taken), `CHECKPOINT_BLOCKED`,
 *   `AGENT_UNREACHABLE`, `RUNTIME_ERROR`.
 */
export async function checkpointRunning(core: Core, record: SandboxRecord, plan: CheckpointPlan): Promise<{ record: SandboxRecord; snapshot: SnapshotRecord }> {
  const runtime = runtimeFor(core, record.runtime);
  // The ingress and the SSH gateway drop their own connections to the sandbox (they would hold it up).
  if (runtime.capabilities.checkpointNeedsQuietNetwork) core.events.emitCheckpointing({ sandboxId: record.id, at: core.clock.now() });
  const snapshotId = newSnapshotId();
  const pending = await pendingSnapshot(core, record, snapshotId, plan);
  const { mark: phase, phases } = phaseTimer();
  let current = await enterPausing(core, record, pending, plan);
  try {
    // One quiesce in the common case (no connection open). With connections open, the sandbox goes back
    // to `running` while they drain (its commands and file calls go on), then the quiesce is retried.
    if (!(await quiesceOnce(core, record.id, runtime))) {
      await core.store.deleteSnapshot(snapshotId);
      await transition(core, current, 'running', { operation: null });
      await waitForNoConnections(core, record.id, runtime);
      current = await enterPausing(core, record, pending, plan);
      await waitForQuietNetwork(core, record.id, runtime);
    }
    phase('quietNetworkMs');
  } catch (err) {
    const now = await core.store.getSandbox(record.id);
    if (now?.state === 'pausing') {
      await core.store.deleteSnapshot(snapshotId);
      await transition(core, now, 'running', { operation: null });
    }
    throw err;
  }

  // The instance's last counter reading (its counters go with it), taken while the agent channel closes
  // and the image directory is made: the processes are stopped by now, and a reading waits for the
  // daemon's file reads queue (tens of ms on a busy host) that the pause need not wait for twice.
  const metered = core.meter.beforeStop(current);
  await core.sessions.suspend(record.id);
  phase('closeAgentMs');
  let sizeBytes: number;
  try {
    const { imageDir } = await core.storage.prepare(snapshotId);
    await metered;
    phase('meterMs');
    await runtime.checkpoint(record.id, imageDir);
    phase('checkpointMs');
    // The instance is gone and the slot is kept: its guest address goes back now, not at the restore.
    if (record.slot !== null) core.network?.prepareGuest?.(record.slot);
    const manifest = await core.storage.commit({ snapshotId, runtime: record.runtime, templateId: record.templateId, parentSnapshotId: record.sourceSnapshotId });
    sizeBytes = manifest.sizeBytes;
    phase('commitMs');
    core.logger.debug('sandbox checkpointed', { sandboxId: record.id, snapshotId, sizeBytes, ...phases });
  } catch (err) {
    throw await rollBackFailedCheckpoint(core, current, snapshotId, err);
  }
  const ready = await core.store.updateSnapshot(snapshotId, { status: 'ready', sizeBytes });
  const paused = await transition(core, current, 'paused', {
    pausedSnapshotId: snapshotId,
    endAt: null,
    error: null,
    operation: plan.afterwards === 'operation-done' ? null : current.operation,
  });
  return { record: paused, snapshot: ready };
}

/** Insert the `pending` snapshot row and move `record` (running, or already paused for a fork) to `pausing` with the operation. */
async function enterPausing(core: Core, record: SandboxRecord, pending: SnapshotRecord, plan: CheckpointPlan): Promise<SandboxRecord> {
  await core.store.insertSnapshot(pending);
  try {
    return await transition(core, record, 'pausing', { operation: plan.operation(pending.id) });
  } catch (err) {
    await core.store.deleteSnapshot(pending.id);
    throw err;
  }
}

/**
 * One quiesce of a `pausing` sandbox: true when its processes are stopped with no connection open (or the
 * runtime needs no quiet network), false when connections are open.
 * @throws RamifyError `AGENT_UNREACHABLE`.
 */
async function quiesceOnce(core: Core, sandboxId: string, runtime: Runtime): Promise<boolean> {
  if (!runtime.capabilities.checkpointNeedsQuietNetwork) return true;
  try {
    await waitForQuietNetwork({ ...core, options: { ...core.options, quietNetworkTimeoutMs: 0 } }, sandboxId, runtime);
    return true;
  } catch (err) {
    if (isRamifyError(err) && err.code === 'CHECKPOINT_BLOCKED') return false;
    throw err;
  }
}

/**
 * A fork point of a running sandbox on a runtime that checkpoints in place (`Runtime.checkpointKeepRunning`):
 * snapshot row `pending` → the operation on the record, which stays `running` (deadline untouched) →
 * quiet-network check → close the agent channel → runtime fork point → commit the image → snapshot
 * `ready` → reopen the agent channel and set the identity again (the guest clock stood still while the
 * VM was stopped). Caller holds the sandbox's lock.
 * @returns the record (running, carrying the operation) and the ready snapshot.
 * @throws RamifyError `CHECKPOINT_BLOCKED`, `AGENT_UNREACHABLE`, `RUNTIME_ERROR` (the sandbox keeps running,
 *   or is `error` when the runtime lost it), `INTERNAL` when the runtime has no fork point.
 */
export async function forkPointRunning(core: Core, record: SandboxRecord, plan: Pick<CheckpointPlan, 'operation'>): Promise<{ record: SandboxRecord; snapshot: SnapshotRecord }> {
  const runtime = runtimeFor(core, record.runtime);
  if (!runtime.checkpointKeepRunning) throw new RamifyError('INTERNAL', `the ${runtime.name} runtime cannot checkpoint a sandbox in place`);
  const snapshotId = newSnapshotId();
  await core.store.insertSnapshot(await pendingSnapshot(core, record, snapshotId, { kind: 'fork' }));
  let current: SandboxRecord;
  try {
    current = await core.store.updateSandbox(record.id, { operation: plan.operation(snapshotId) });
    await waitForQuietNetwork(core, record.id, runtime);
  } catch (err) {
    await core.store.deleteSnapshot(snapshotId);
    await core.store.updateSandbox(record.id, { operation: null });
    throw err;
  }
  const { mark: phase, phases } = phaseTimer();
  await core.sessions.suspend(record.id);
  let sizeBytes: number;
  try {
    const { imageDir } = await core.storage.prepare(snapshotId);
    await runtime.checkpointKeepRunning(record.id, imageDir);
    phase('forkPointMs');
    sizeBytes = (await core.storage.commit({ snapshotId, runtime: record.runtime, templateId: record.templateId, parentSnapshotId: record.sourceSnapshotId })).sizeBytes;
    phase('commitMs');
  } catch (err) {
    throw await rollBackFailedCheckpoint(core, current, snapshotId, err);
  }
  // The guest's clock stood still while the VM was stopped: set it again (with the rest of its identity).
  await core.sessions
    .open(record.id)
    .then((session) => session.setIdentity(identityFor(core, current)))
    .catch((err: unknown) => core.logger.warn('reopening agent after a fork point', { sandboxId: record.id, error: messageOf(err) }));
  phase('reopenAgentMs');
  core.logger.debug('fork point taken; the sandbox kept running', { sandboxId: record.id, snapshotId, sizeBytes, ...phases });
  const ready = await core.store.updateSnapshot(snapshotId, { status: 'ready', sizeBytes });
  return { record: current, snapshot: ready };
}

/**
 * The `pending` row of a snapshot about to be taken of `record`, with a copy of its envs (the image's
 * environment), of its exposed ports, its idle auto-pause, its egress policy and its private networks now (the caller holds its
 * lock, so no change comes in between).
 */
async function pendingSnapshot(core: Core, record: SandboxRecord, snapshotId: string, plan: Pick<CheckpointPlan, 'kind' | 'name'>): Promise<SnapshotRecord> {
  return {
    id: snapshotId,
    teamId: record.teamId,
    name: plan.name ?? null,
    kind: plan.kind,
    status: 'pending',
    runtime: record.runtime,
    templateId: record.templateId,
    sandboxId: record.id,
    parentSnapshotId: record.sourceSnapshotId,
    sizeBytes: 0,
    createdAt: core.clock.now(),
    cpuCount: record.cpuCount,
    memoryMB: record.memoryMB,
    diskSizeMB: record.diskSizeMB,
    rootfsDir: record.rootfsDir,
    envs: { ...record.envs },
    egress: await storedEgressPolicy(core, record.id),
    ingress: copyIngress(record.ingress),
    autoPause: record.autoPause === null ? null : { ...record.autoPause },
    hostId: core.hostId,
    networks: await recordedNetworks(core, record.id),
  };
}

/**
 * After a failed runtime checkpoint or fork point: the sandbox goes (back) to running when its instance
 * survived (a checkpoint's record is `pausing`; a fork point's stayed `running`), else `error`. Returns
 * the error to throw.
 */
async function rollBackFailedCheckpoint(core: Core, record: SandboxRecord, snapshotId: string, err: unknown): Promise<RamifyError> {
  const what = record.state === 'running' ? 'fork point' : 'checkpoint';
  const reason = messageOf(err);
  core.logger.error(`${what} failed`, { sandboxId: record.id, snapshotId, error: reason });
  await core.storage.remove(snapshotId).catch(() => undefined);
  await core.store.deleteSnapshot(snapshotId);
  const status = await runtimeFor(core, record.runtime)
    .status(record.id)
    .catch(() => ({ state: 'missing' as const, reason: undefined }));
  if (status.state === 'running') {
    if (record.state === 'running') await core.store.updateSandbox(record.id, { operation: null });
    else await transition(core, record, 'running', { operation: null });
    await core.sessions.open(record.id).catch((openErr: unknown) => core.logger.warn(`reopening agent after a failed ${what}`, { sandboxId: record.id, error: messageOf(openErr) }));
    const code = isRamifyError(err) ? err.code : 'RUNTIME_ERROR';
    return new RamifyError(code, `${what} of sandbox '${record.id}' failed (it keeps running): ${reason}`, { ...(isRamifyError(err) ? err.details : {}), id: record.id });
  }
  const why = `${what} failed and the runtime stopped the sandbox${status.reason ? ` (${status.reason})` : ''}: ${reason}`;
  // Never lost: bring it back from the image it was last started from (its changes since then are gone).
  const source = record.sourceSnapshotId;
  if (source === null) {
    await transition(core, record, 'error', { operation: null, endAt: null, error: why });
    return new RamifyError('RUNTIME_ERROR', `sandbox '${record.id}': ${why}`, { id: record.id, runtimeReason: reason });
  }
  try {
    await bringUp(core, record, source);
    if (record.state !== 'running') await transition(core, record, 'running', { operation: null, error: null });
    else await core.store.updateSandbox(record.id, { operation: null });
    core.logger.warn(`${what} failed; the sandbox was restored from its last image`, { sandboxId: record.id, snapshotId: source, error: reason });
    return new RamifyError(
      'RUNTIME_ERROR',
      `sandbox '${record.id}': ${why}; it was restored from the image it was last started from (snapshot '${source}'): it runs, but what changed since that image is lost`,
      { id: record.id, restoredFrom: source, runtimeReason: reason },
    );
  } catch (restoreErr) {
    const lost = `${why}; restoring it from snapshot '${source}' failed too: ${messageOf(restoreErr)}`;
    await transition(core, record, 'error', { operation: null, endAt: null, error: lost });
    return new RamifyError('RUNTIME_ERROR', `sandbox '${record.id}': ${lost}`, { id: record.id, runtimeReason: reason });
  }
}
