/**
 * Checkpointing a running sandbox into a new snapshot, the shared first half of pause, fork-of-running
 * and snapshot-of-running. Order (each write persisted before the next step acts):
 * snapshot row `pending` → `running → pausing` with the operation → quiet-network check → close the agent
 * channel → runtime checkpoint → commit the image → snapshot `ready` → `pausing → paused`.
 *
 * Failure handling, so that pause never kills a sandbox:
 * - network still busy (`CHECKPOINT_BLOCKED`) or agent unreachable before the checkpoint: back to
 *   `running`, channel untouched;
 * - the runtime's checkpoint fails and the instance is still running: back to `running`, channel reopened;
 * - it fails and the instance is gone (the runtime killed it): `error`, with the reason.
 */
import { RamifyError, isRamifyError } from '@ramify/contracts';
import { runtimeFor, type Core } from '../core.js';
import { newSnapshotId } from '../ids.js';
import type { SandboxOperation, SandboxRecord, SnapshotRecord } from '../ports/store.js';
import { waitForQuietNetwork } from './quiet-network.js';
import { phaseTimer } from './phase-timer.js';
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
  const snapshotId = newSnapshotId();
  const snapshot: SnapshotRecord = {
    id: snapshotId,
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
  };
  await core.store.insertSnapshot(snapshot);
  let current: SandboxRecord;
  try {
    current = await transition(core, record, 'pausing', { operation: plan.operation(snapshotId) });
  } catch (err) {
    await core.store.deleteSnapshot(snapshotId);
    throw err;
  }

  const { mark: phase, phases } = phaseTimer();
  try {
    await waitForQuietNetwork(core, record.id, runtime);
    phase('quietNetworkMs');
  } catch (err) {
    await core.store.deleteSnapshot(snapshotId);
    await transition(core, current, 'running', { operation: null });
    throw err;
  }

  await core.sessions.suspend(record.id);
  phase('closeAgentMs');
  let sizeBytes: number;
  try {
    const { imageDir } = await core.storage.prepare(snapshotId);
    await runtime.checkpoint(record.id, imageDir);
    phase('checkpointMs');
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

/** After a failed runtime checkpoint: back to running when the instance survived, else `error`. Returns the error to throw. */
async function rollBackFailedCheckpoint(core: Core, record: SandboxRecord, snapshotId: string, err: unknown): Promise<RamifyError> {
  const reason = messageOf(err);
  core.logger.error('checkpoint failed', { sandboxId: record.id, snapshotId, error: reason });
  await core.storage.remove(snapshotId).catch(() => undefined);
  await core.store.deleteSnapshot(snapshotId);
  const status = await runtimeFor(core, record.runtime)
    .status(record.id)
    .catch(() => ({ state: 'missing' as const, reason: undefined }));
  if (status.state === 'running') {
    const running = await transition(core, record, 'running', { operation: null });
    await core.sessions.open(running.id).catch((openErr: unknown) => core.logger.warn('reopening agent after failed checkpoint', { sandboxId: record.id, error: messageOf(openErr) }));
    return isRamifyError(err) ? err : new RamifyError('RUNTIME_ERROR', `checkpoint of sandbox '${record.id}' failed (it keeps running): ${reason}`, { id: record.id });
  }
  const why = `checkpoint failed and the runtime stopped the sandbox${status.reason ? ` (${status.reason})` : ''}: ${reason}`;
  await transition(core, record, 'error', { operation: null, endAt: null, error: why });
  return new RamifyError('RUNTIME_ERROR', `sandbox '${record.id}': ${why}`, { id: record.id });
}
