/**
 * Snapshot garbage collection: `pause` and `fork` images exist for their sandboxes, so once no live
 * sandbox needs one (as its paused image or as the source it was created from) it is deleted, files and
 * row. A `template` image goes the same way once no template lists it any more (a rebuild replaced it,
 * or the template was deleted) and no live sandbox was made from it. `named` snapshots are only deleted
 * on request ({@link deleteSnapshot}).
 */
import { RamifyError, notFound } from '@ramify/contracts';
import type { Core } from '../context.js';
import { DEFAULT_TEAM_ID } from '../access/actor.js';
import { messageOf } from './records.js';

/** Delete those of `snapshotIds` that are not `named` and that nothing references. Never throws. */
export async function collectSnapshots(core: Core, snapshotIds: Array<string | null>): Promise<void> {
  for (const id of new Set(snapshotIds)) {
    if (id === null) continue;
    try {
      const snapshot = await core.store.getSnapshot(id);
      if (!snapshot || snapshot.kind === 'named' || snapshot.status !== 'ready') continue;
      const refs = await core.store.snapshotReferences(id);
      if (refs.pausedBy.length + refs.sourceOf.length + refs.templates.length > 0) continue;
      await core.storage.remove(id);
      await core.store.deleteSnapshot(id);
    } catch (err) {
      core.logger.warn('snapshot garbage collection failed', { snapshotId: id, error: messageOf(err) });
    }
  }
}

/**
 * Delete one of `teamId`'s snapshots (by id or name; default the default team's) on request. Another
 * team's snapshot is not found; a shared template's image, which every team sees, is refused (its
 * template goes with `deleteTemplate`, by the default team).
 * @throws RamifyError `SNAPSHOT_NOT_FOUND`; `FORBIDDEN` (a shared image); `CONFLICT` while a paused sandbox resumes from it or a template is built on it.
 */
export async function deleteSnapshot(core: Core, idOrName: string, teamId: string = DEFAULT_TEAM_ID): Promise<void> {
  const byId = await core.store.getSnapshot(idOrName);
  const shared = byId?.kind === 'template' && byId.teamId === DEFAULT_TEAM_ID;
  const snapshot = byId && (byId.teamId === teamId || shared) ? byId : await core.store.findSnapshotByName(idOrName, teamId);
  if (!snapshot) throw notFound('SNAPSHOT_NOT_FOUND', 'snapshot', idOrName, { id: idOrName });
  if (snapshot.teamId !== teamId) throw new RamifyError('FORBIDDEN', `snapshot '${snapshot.id}' is a shared template's image: only the '${DEFAULT_TEAM_ID}' team deletes it (with its template)`, { id: snapshot.id });
  const snapshotId = snapshot.id;
  const refs = await core.store.snapshotReferences(snapshotId);
  const blockers = [...refs.pausedBy.map((id) => `paused sandbox ${id}`), ...refs.templates.map((id) => `template ${id}`)];
  if (blockers.length > 0) {
    throw new RamifyError('CONFLICT', `snapshot '${snapshotId}' is still needed by ${blockers.join(', ')}`, { id: snapshotId, neededBy: blockers });
  }
  await core.storage.remove(snapshotId);
  await core.store.deleteSnapshot(snapshotId);
}
