/**
 * Bringing a paused sandbox back (`paused → resuming → running`), the shared half of resume and of
 * fork/snapshot of a running sandbox (which checkpoint it and then restore it). Same id; the same slot on
 * the same host, a slot of this host's own when it comes from another (its old host's slot number may be
 * another sandbox's here). A failed restore goes back to `paused`: the image is intact, so a paused sandbox
 * is never lost.
 */
import { RamifyError } from '@ramify/contracts';
import type { Core } from '../context.js';
import type { SandboxRecord } from '../ports/store.js';
import { phaseTimer } from '../observe/operation.js';
import { bringUp } from './bring-up.js';
import { collectSnapshots } from './snapshot-gc.js';
import { messageOf, transition } from './records.js';

export interface RestorePausedPlan {
  /** When the timeout action fires once running, ms. */
  endAt: number;
  /** New lifetime to record (resume with `timeoutMs`). */
  timeoutMs?: number;
  /** Keep the record's operation (fork/snapshot continue) or persist a `resume` operation and clear it at the end. */
  afterwards: 'operation-continues' | 'operation-done';
}

/**
 * Restore the paused sandbox `record` from its pause image. Caller holds the sandbox's lock.
 * @returns the record, now `running`.
 * @throws RamifyError `INVALID_STATE` when not paused; the restore's error (the sandbox is `paused` again).
 */
export async function restorePaused(core: Core, record: SandboxRecord, plan: RestorePausedPlan): Promise<SandboxRecord> {
  const snapshotId = record.pausedSnapshotId;
  if (snapshotId === null) throw new RamifyError('INTERNAL', `paused sandbox '${record.id}' has no pause image`, { id: record.id });
  const keep = plan.afterwards === 'operation-continues';
  const { mark: phase, within, phases } = phaseTimer();
  // Its instance will run on this host: recorded before the restore, so a crash leaves it to this host's reconcile.
  // Its slot is leased here: the lease it holds here, or a free one (giving up its old host's lease), never
  // the old host's number as is, which here may be another sandbox's namespace.
  const slot = record.hostId === core.hostId && record.slot !== null ? record.slot : await core.store.allocateSlot(record.id, core.hostId);
  const resuming = await transition(core, record, 'resuming', { operation: keep ? record.operation : { kind: 'resume', snapshotId }, hostId: core.hostId, slot });
  phase('resumingMs');
  try {
    await within('bringUpMs', () => bringUp(core, resuming, snapshotId));
  } catch (err) {
    await transition(core, resuming, 'paused', { operation: keep ? record.operation : null, error: `resume failed: ${messageOf(err)}` });
    throw err;
  }
  const running = await transition(core, resuming, 'running', {
    pausedSnapshotId: null,
    endAt: plan.endAt,
    ...(plan.timeoutMs !== undefined ? { timeoutMs: plan.timeoutMs } : {}),
    error: null,
    operation: keep ? record.operation : null,
  });
  phase('runningMs');
  core.logger.debug('sandbox resumed', { sandboxId: record.id, ...phases });
  // A continuing operation (fork) still needs the image; it collects it itself when done. A resume collects
  // it once its caller has its answer (deleting ~70 MB and its row took 15-28 ms of every resume): queued on
  // the sandbox's lock, so the sandbox's next call comes after it. Left behind by a crash meanwhile, reconcile
  // collects it (`collectUnreferencedPauseImages`).
  if (!keep) void core.locks.run(record.id, () => collectSnapshots(core, [snapshotId]));
  return running;
}
