/**
 * Quota reservations (migration 34; core's `ports/team-room.ts`): admission into a team's quota, atomic
 * across processes. The team's row is locked (Postgres `SELECT … FOR UPDATE`; SQLite's transactions take
 * turns on its one connection), then its holders and live reservations are read in **one statement**
 * (one snapshot under READ COMMITTED: a call that writes its sandbox's row and then drops its reservation
 * is seen in one form or the other, never in neither), the caller's rule decides, and the reservations
 * are written before the lock is released. Lease times are the database's clock (`databaseNow`).
 */
import type { TeamQuota } from '@ramify/contracts';
import type { TeamRoomRequest, TeamRoomResult, TeamUsage } from '@ramify/core';
import { sql } from 'kysely';
import { databaseNow } from './hosts.js';
import { dialectOf } from './prepared.js';
import { inTransaction, type Executor } from './schema.js';

interface HeldRow {
  id: string;
  state: string;
  memory_mb: number | string;
  operation: string | null;
}

/** Marks a reservation row in the union below (not a sandbox state). */
const RESERVED = '~reserved';

/** Holders and live reservations of `teamId` in one statement, each sandbox once, minus `except`. */
async function usageOf(db: Executor, teamId: string, states: readonly string[], now: number, except: ReadonlySet<string>): Promise<TeamUsage> {
  const { rows } = await sql<HeldRow>`
    SELECT id, state, memory_mb, operation FROM sandboxes
      WHERE team_id = ${teamId} AND (state IN (${sql.join(states.length > 0 ? states : ['-'])}) OR (state = 'paused' AND operation IS NOT NULL))
    UNION ALL
    SELECT sandbox_id AS id, ${RESERVED} AS state, memory_mb, NULL AS operation FROM quota_reservations
      WHERE team_id = ${teamId} AND expires_at > ${now}`.execute(db);
  const held = new Map<string, number>();
  for (const r of rows) {
    const holds = r.state === RESERVED || states.includes(r.state) || (r.operation !== null && (JSON.parse(r.operation) as { parentWasRunning?: unknown }).parentWasRunning === true);
    if (holds && !except.has(r.id)) held.set(r.id, Number(r.memory_mb));
  }
  let memoryMB = 0;
  for (const mb of held.values()) memoryMB += mb;
  return { running: held.size, memoryMB };
}

/** See `TeamRoomStore.reserveTeamRoom`. */
export async function reserveTeamRoom(db: Executor, req: TeamRoomRequest): Promise<TeamRoomResult | null> {
  return inTransaction(db, async (trx) => {
    let q = trx.selectFrom('teams').select(['max_running', 'max_memory_mb', 'max_forks_per_call']).where('id', '=', req.teamId);
    if (dialectOf(trx) === 'postgres') q = q.forUpdate();
    const team = await q.executeTakeFirst();
    if (!team) return null;
    const quota: TeamQuota = { maxRunning: nullableNumber(team.max_running), maxMemoryMB: nullableNumber(team.max_memory_mb), maxForksPerCall: nullableNumber(team.max_forks_per_call) };
    const now = await databaseNow(trx);
    await trx.deleteFrom('quota_reservations').where('team_id', '=', req.teamId).where('expires_at', '<=', now).execute();
    const usage = await usageOf(trx, req.teamId, req.holdingStates, now, new Set(req.demand.map((d) => d.id)));
    const admitted = req.admits(quota, usage);
    if (admitted && req.demand.length > 0) {
      const rows = req.demand.map((d) => ({ team_id: req.teamId, sandbox_id: d.id, memory_mb: d.memoryMB, holder: req.holder, expires_at: now + req.leaseMs }));
      await trx
        .insertInto('quota_reservations')
        .values(rows)
        .onConflict((oc) => oc.columns(['team_id', 'sandbox_id']).doUpdateSet((eb) => ({ memory_mb: eb.ref('excluded.memory_mb'), holder: eb.ref('excluded.holder'), expires_at: eb.ref('excluded.expires_at') })))
        .execute();
    }
    return { admitted, quota, usage };
  });
}

export async function renewTeamRoom(db: Executor, teamId: string, sandboxIds: readonly string[], leaseMs: number): Promise<void> {
  if (sandboxIds.length === 0) return;
  const now = await databaseNow(db);
  await db.updateTable('quota_reservations').set({ expires_at: now + leaseMs }).where('team_id', '=', teamId).where('sandbox_id', 'in', sandboxIds).where('expires_at', '>', now).execute();
}

export async function releaseTeamRoom(db: Executor, teamId: string, sandboxIds: readonly string[]): Promise<void> {
  if (sandboxIds.length === 0) return;
  await db.deleteFrom('quota_reservations').where('team_id', '=', teamId).where('sandbox_id', 'in', sandboxIds).execute();
}

export async function teamUsage(db: Executor, teamId: string, states: readonly string[]): Promise<TeamUsage> {
  return usageOf(db, teamId, states, await databaseNow(db), new Set());
}

function nullableNumber(v: number | string | null): number | null {
  return v === null ? null : Number(v);
}
