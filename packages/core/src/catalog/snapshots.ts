/**
 * Use-cases: read and delete snapshots, and which snapshots a team sees (docs/design/TEAMS.md): its own,
 * plus the images of the shared templates (the default team's template images). Names are per team.
 */
import { RamifyError, notFound } from '@ramify/contracts';
import type { Core } from '../context.js';
import type { SnapshotRecord } from '../ports/store.js';
import { DEFAULT_TEAM_ID } from '../access/actor.js';

export { deleteSnapshot } from '../lifecycle/snapshot-gc.js';

/** Whether `teamId` may see (list, read, create sandboxes from) `snapshot`. */
export function snapshotVisibleTo(snapshot: SnapshotRecord, teamId: string): boolean {
  return snapshot.teamId === teamId || (snapshot.kind === 'template' && snapshot.teamId === DEFAULT_TEAM_ID);
}

/**
 * The snapshot `idOrName` as `teamId` sees it: by id when visible to the team, else by name among the
 * team's own; null otherwise (another team's snapshot is as absent as an unknown one).
 */
export async function findVisibleSnapshot(core: Pick<Core, 'store'>, idOrName: string, teamId: string): Promise<SnapshotRecord | null> {
  const byId = await core.store.getSnapshot(idOrName);
  if (byId && snapshotVisibleTo(byId, teamId)) return byId;
  return core.store.findSnapshotByName(idOrName, teamId);
}

/** Committed snapshots `teamId` sees, newest first (images still being written are left out). */
export async function listSnapshots(core: Core, filter: { sandboxId?: string; teamId?: string } = {}): Promise<SnapshotRecord[]> {
  const teamId = filter.teamId ?? DEFAULT_TEAM_ID;
  const query = filter.sandboxId === undefined ? {} : { sandboxId: filter.sandboxId };
  return (await core.store.listSnapshots(query)).filter((s) => s.status === 'ready' && snapshotVisibleTo(s, teamId));
}

/**
 * One snapshot by id or name, as `teamId` (default the default team) sees it.
 * @throws RamifyError `SNAPSHOT_NOT_FOUND`.
 */
export async function getSnapshot(core: Core, idOrName: string, teamId: string = DEFAULT_TEAM_ID): Promise<SnapshotRecord> {
  const snapshot = await findVisibleSnapshot(core, idOrName, teamId);
  if (!snapshot || snapshot.status !== 'ready') throw notFound('SNAPSHOT_NOT_FOUND', 'snapshot', idOrName, { id: idOrName });
  return snapshot;
}
