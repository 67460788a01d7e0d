/**
 * Use-case: take a named snapshot that outlives its sandbox (`create({ snapshot })` starts from it).
 * A running sandbox is checkpointed into it and restored at once (same deadline); a paused sandbox's
 * pause image simply becomes the named snapshot (no copy).
 */
import { RamifyError } from '@ramify/contracts';
import type { Core } from '../context.js';
import { storedEgressPolicy } from '../egress/get-egress.js';
import { copyIngress } from '../ingress/ports.js';
import { runOperation } from '../observe/operation.js';
import { recordedNetworks } from '../networks/enforcement.js';
import type { SandboxRecord, SnapshotRecord } from '../ports/store.js';
import { checkpointRunning } from './checkpoint.js';
import { loadSandbox, messageOf } from './records.js';
import { restorePaused } from './restore-paused.js';
import { checkpointSourceFor } from './state-machine.js';

export interface SnapshotInput {
  /** Unique among the team's snapshots; 1-128 of [a-zA-Z0-9._-]. */
  name: string;
}

/**
 * @returns the new snapshot (`kind: 'named'`, ready).
 * @throws RamifyError `SANDBOX_NOT_FOUND`, `INVALID_STATE`, `CONFLICT` (name taken, or the paused sandbox's image
 *   is already a named snapshot: resume it to take another), `CHECKPOINT_BLOCKED` (the sandbox keeps running), `RUNTIME_ERROR`.
 */
export async function snapshotSandbox(core: Core, sandboxId: string, input: SnapshotInput): Promise<SnapshotRecord> {
  return runOperation(core, { name: 'snapshot', sandboxId }, async () => {
    const { record, snapshot } = await core.locks.run(sandboxId, () => snapshotLocked(core, sandboxId, input));
    core.events.emitSnapshotted({ sandboxId, sandbox: record, snapshot, at: core.clock.now() });
    return snapshot;
  });
}

/** The snapshot under the sandbox's lock; also the sandbox's record as it was when the snapshot was taken. */
async function snapshotLocked(core: Core, sandboxId: string, input: SnapshotInput): Promise<{ record: SandboxRecord; snapshot: SnapshotRecord }> {
  const record = await loadSandbox(core, sandboxId);
  if (await core.store.findSnapshotByName(input.name, record.teamId)) {
    throw new RamifyError('CONFLICT', `a snapshot named '${input.name}' already exists`, { name: input.name });
  }
  if (checkpointSourceFor(sandboxId, record.state) === 'pause-image') return { record, snapshot: await nameThePauseImage(core, record, input.name) };

  const endAt = record.endAt ?? core.clock.now() + record.timeoutMs;
  const { record: paused, snapshot } = await checkpointRunning(core, record, {
    kind: 'named',
    name: input.name,
    operation: (snapshotId) => ({ kind: 'snapshot', snapshotId, name: input.name, parentWasRunning: true }),
    afterwards: 'operation-done',
  });
  try {
    await restorePaused(core, paused, { endAt, afterwards: 'operation-done' });
  } catch (err) {
    // The snapshot is safe; the sandbox stays paused and resumable. Report the snapshot, log the restore.
    core.logger.error('snapshot: restoring the sandbox failed; it stays paused', { sandboxId, error: messageOf(err) });
  }
  return { record, snapshot };
}

/**
 * The paused sandbox's pause image becomes the named snapshot. An image taken before snapshots recorded
 * envs gets the sandbox's (fixed at its create, so the same as when the image was taken). It records the
 * sandbox's egress policy, exposed ports and idle auto-pause now: they may have changed while it was paused, and the
 * snapshot is taken now (as a resume would enforce the current policy).
 */
async function nameThePauseImage(core: Core, record: SandboxRecord, name: string): Promise<SnapshotRecord> {
  const sandboxId = record.id;
  const image = record.pausedSnapshotId === null ? null : await core.store.getSnapshot(record.pausedSnapshotId);
  if (!image) throw new RamifyError('INTERNAL', `paused sandbox '${sandboxId}' has no pause image`, { id: sandboxId });
  if (image.kind === 'named' || image.kind === 'template') {
    throw new RamifyError('CONFLICT', `sandbox '${sandboxId}' is paused on snapshot '${image.name ?? image.id}'; resume it to take another snapshot`, {
      id: sandboxId,
      snapshotId: image.id,
    });
  }
  const egress = await storedEgressPolicy(core, sandboxId);
  return core.store.updateSnapshot(image.id, {
    kind: 'named',
    name,
    egress,
    ingress: copyIngress(record.ingress),
    autoPause: record.autoPause === null ? null : { ...record.autoPause },
    networks: await recordedNetworks(core, sandboxId),
    ...(image.envs === null ? { envs: { ...record.envs } } : {}),
  });
}
