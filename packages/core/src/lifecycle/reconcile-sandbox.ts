/**
 * Reconcile one sandbox after a daemon (re)start: compare its persisted state and in-flight operation
 * with what the runtime and snapshot storage actually hold, and roll the operation forward or back.
 *
 * | state     | runtime instance up                       | instance gone                                 |
 * |-----------|-------------------------------------------|-----------------------------------------------|
 * | running   | re-attach the agent                       | `error` (it stopped while we were away)       |
 * | creating  | forward: agent + identity → `running`     | back: release → `error`                       |
 * | pausing   | back: drop partial image → `running`      | image on disk (committed now if needed): forward → `paused`; else `error` |
 * | paused    | stale instance killed; stays `paused`     | stays `paused` (if its image exists, else `error`) |
 * | resuming  | forward: agent + identity → `running`     | back → `paused`                               |
 * | killing   | forward: finish the kill                  | forward: finish the kill                      |
 */
import type { Core } from '../context.js';
import type { Runtime } from '../ports/runtime.js';
import type { SandboxRecord } from '../ports/store.js';
import { identityFor, releaseResources } from './bring-up.js';
import { finishKill } from './kill.js';
import { messageOf, transition } from './records.js';
import { collectSnapshots } from './snapshot-gc.js';

/** What reconcile did to one sandbox. */
export type ReconcileOutcome = 'reattached' | 'rolled-forward' | 'rolled-back' | 'unchanged' | 'failed';

/** Reconcile `record`; caller holds its lock. Never throws: failures become `error` states and log lines. */
export async function reconcileSandbox(core: Core, record: SandboxRecord, runtime: Runtime | undefined): Promise<ReconcileOutcome> {
  try {
    if (runtime && record.state !== 'paused' && record.state !== 'killed' && record.state !== 'error') await runtime.settleInterrupted(record.id);
    const up = runtime ? (await runtime.status(record.id)).state === 'running' : false;
    switch (record.state) {
      case 'running':
        if (!up) return lost(core, record, 'the sandbox stopped while the daemon was down');
        await core.sessions.open(record.id).catch((err: unknown) => core.logger.warn('reconcile: agent not reachable yet', { sandboxId: record.id, error: messageOf(err) }));
        if (record.operation) {
          // A fork point taken in place (the parent never stopped): its children were undone; drop the image.
          await core.store.updateSandbox(record.id, { operation: null });
          if (record.operation.kind === 'fork') await collectSnapshots(core, [record.operation.snapshotId]);
        }
        return 'reattached';
      case 'creating':
        if (up && (await reidentify(core, record))) {
          await transition(core, record, 'running', { operation: null, endAt: core.clock.now() + record.timeoutMs });
          return 'rolled-forward';
        }
        return lost(core, record, 'create was interrupted by a daemon restart');
      case 'pausing':
        return reconcilePausing(core, record, up);
      case 'paused':
        if (up && runtime) await runtime.kill(record.id);
        if (record.pausedSnapshotId === null || !(await imageExists(core, record.pausedSnapshotId))) return lost(core, record, 'its pause image is missing');
        if (record.operation) await core.store.updateSandbox(record.id, { operation: null });
        return 'unchanged';
      case 'resuming':
        if (up && (await reidentify(core, record))) {
          await transition(core, record, 'running', { operation: null, pausedSnapshotId: null, endAt: core.clock.now() + record.timeoutMs, error: null });
          await collectSnapshots(core, [record.pausedSnapshotId]);
          return 'rolled-forward';
        }
        if (runtime) await runtime.kill(record.id);
        await transition(core, record, 'paused', { operation: null });
        return 'rolled-back';
      case 'killing':
        await finishKill(core, record);
        return 'rolled-forward';
      default:
        if (record.operation) await core.store.updateSandbox(record.id, { operation: null });
        return 'unchanged';
    }
  } catch (err) {
    core.logger.error('reconcile failed for sandbox', { sandboxId: record.id, state: record.state, error: messageOf(err) });
    return 'failed';
  }
}

async function reconcilePausing(core: Core, record: SandboxRecord, up: boolean): Promise<ReconcileOutcome> {
  const op = record.operation;
  const snapshotId = op && 'snapshotId' in op ? op.snapshotId : null;
  if (up) {
    if (snapshotId) await dropImage(core, snapshotId);
    await transition(core, record, 'running', { operation: null });
    await core.sessions.open(record.id).catch(() => undefined);
    return 'rolled-back';
  }
  if (snapshotId && !(await imageExists(core, snapshotId))) {
    // The checkpoint finished after the daemon died (the runtime's command outlived it): the image is
    // on disk but was never committed. The instance is gone, so the checkpoint completed: commit it now.
    await core.storage
      .commit({ snapshotId, runtime: record.runtime, templateId: record.templateId, parentSnapshotId: record.sourceSnapshotId })
      .then(() => core.logger.info('reconcile: committed a checkpoint the previous daemon did not', { sandboxId: record.id, snapshotId }))
      .catch(() => undefined);
  }
  if (snapshotId && (await imageExists(core, snapshotId))) {
    const { manifest } = await core.storage.open(snapshotId);
    await core.store.updateSnapshot(snapshotId, { status: 'ready', sizeBytes: manifest.sizeBytes });
    const keepOp = op?.kind === 'fork' || op?.kind === 'snapshot';
    await transition(core, record, 'paused', { pausedSnapshotId: snapshotId, endAt: null, operation: keepOp ? op : null });
    return 'rolled-forward';
  }
  if (snapshotId) await dropImage(core, snapshotId);
  return lost(core, record, 'a checkpoint was interrupted and no image was written');
}

/** Re-open the agent and re-seed identity; false when the agent does not answer. */
async function reidentify(core: Core, record: SandboxRecord): Promise<boolean> {
  try {
    const session = await core.sessions.open(record.id);
    await session.setIdentity(identityFor(core, record));
    return true;
  } catch (err) {
    core.logger.warn('reconcile: agent did not answer', { sandboxId: record.id, error: messageOf(err) });
    return false;
  }
}

async function lost(core: Core, record: SandboxRecord, why: string): Promise<ReconcileOutcome> {
  const failure = await releaseResources(core, record);
  await transition(core, record, 'error', { operation: null, endAt: null, slot: failure === null ? null : record.slot, error: why });
  core.logger.warn('reconcile: sandbox lost', { sandboxId: record.id, reason: why });
  return 'rolled-back';
}

async function imageExists(core: Core, snapshotId: string): Promise<boolean> {
  try {
    await core.storage.open(snapshotId);
    return true;
  } catch {
    return false;
  }
}

async function dropImage(core: Core, snapshotId: string): Promise<void> {
  await core.storage.remove(snapshotId).catch(() => undefined);
  await core.store.deleteSnapshot(snapshotId);
}
