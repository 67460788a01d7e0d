/**
 * Use-cases: read and delete snapshots.
 */
import { RamifyError } from '@ramify/contracts';
import type { Core } from '../core.js';
import type { SnapshotRecord } from '../ports/store.js';

export { deleteSnapshot } from '../lifecycle/snapshot-gc.js';

/** Committed snapshots, newest first (images still being written are left out). */
export async function listSnapshots(core: Core, filter: { sandboxId?: string } = {}): Promise<SnapshotRecord[]> {
  return (await core.store.listSnapshots(filter)).filter((s) => s.status === 'ready');
}

/**
 * One snapshot by id or name.
 * @throws RamifyError `SNAPSHOT_NOT_FOUND`.
 */
export async function getSnapshot(core: Core, idOrName: string): Promise<SnapshotRecord> {
  const snapshot = (await core.store.getSnapshot(idOrName)) ?? (await core.store.findSnapshotByName(idOrName));
  if (!snapshot || snapshot.status !== 'ready') throw new RamifyError('SNAPSHOT_NOT_FOUND', `snapshot '${idOrName}' not found`, { id: idOrName });
  return snapshot;
}
