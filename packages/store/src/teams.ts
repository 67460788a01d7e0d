/**
 * Team rows (migration 17): the id, when it was made, and its quota (a NULL column: no limit).
 */
import { RamifyError, notFound } from '@ramify/contracts';
import type { TeamRecord } from '@ramify/core';
import type { Selectable } from 'kysely';
import { conflictOnConstraint } from './errors.js';
import type { Executor, TeamsTable } from './schema.js';

type TeamRow = Selectable<TeamsTable>;

const teamFromRow = (r: TeamRow): TeamRecord => ({
  id: r.id,
  createdAt: r.created_at,
  quota: { maxRunning: r.max_running, maxMemoryMB: r.max_memory_mb, maxForksPerCall: r.max_forks_per_call },
});

/** @throws RamifyError `CONFLICT` (id taken, or refused by the table's checks). */
export async function insertTeam(db: Executor, t: TeamRecord): Promise<void> {
  try {
    await db
      .insertInto('teams')
      .values({ id: t.id, created_at: t.createdAt, max_running: t.quota.maxRunning, max_memory_mb: t.quota.maxMemoryMB, max_forks_per_call: t.quota.maxForksPerCall })
      .execute();
  } catch (err) {
    conflictOnConstraint(err, `team '${t.id}' already exists`);
  }
}

export async function getTeam(db: Executor, id: string): Promise<TeamRecord | null> {
  const row = await db.selectFrom('teams').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? teamFromRow(row) : null;
}

export async function listTeams(db: Executor): Promise<TeamRecord[]> {
  return (await db.selectFrom('teams').selectAll().orderBy('id').execute()).map(teamFromRow);
}

/** Set the limits given (absent ones kept) in one UPDATE: two processes setting different limits keep both. @throws RamifyError `TEAM_NOT_FOUND`. */
export async function setTeamQuota(db: Executor, id: string, quota: Partial<TeamRecord['quota']>): Promise<TeamRecord> {
  const set = {
    ...(quota.maxRunning !== undefined ? { max_running: quota.maxRunning } : {}),
    ...(quota.maxMemoryMB !== undefined ? { max_memory_mb: quota.maxMemoryMB } : {}),
    ...(quota.maxForksPerCall !== undefined ? { max_forks_per_call: quota.maxForksPerCall } : {}),
  };
  const found = Object.keys(set).length === 0 || (await db.updateTable('teams').set(set).where('id', '=', id).executeTakeFirst()).numUpdatedRows > 0n;
  const updated = found ? await getTeam(db, id) : null;
  if (!updated) throw notFound('TEAM_NOT_FOUND', 'team', id, { id });
  return updated;
}
