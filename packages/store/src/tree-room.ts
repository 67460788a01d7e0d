/**
 * Fork-tree reservations (migration 34; core's `ports/tree-room.ts`): a fork's children admitted into the
 * `maxSandboxes` of the budgets covering its parent, atomic across processes. The budgets' rows are locked
 * in id order (Postgres `FOR UPDATE`; SQLite's transactions take turns), then for each budget its tree's
 * live members and live reservations are read in **one statement** (a recursive walk of `parent_id`
 * beside the reservations: one snapshot, so a child whose row appears as its reservation goes is seen in
 * one form or the other), the caller's rule decides, and the reservations are written before the locks go.
 */
import type { TreeRoomRequest, TreeRoomResult } from '@ramify/core';
import { sql } from 'kysely';
import { databaseNow } from './hosts.js';
import { dialectOf } from './prepared.js';
import { inTransaction, type Executor } from './schema.js';

/** Live members of the tree of `rootId` and live reservations against its budget, each sandbox once, minus `except`. */
async function aliveIn(db: Executor, rootId: string, deadStates: readonly string[], now: number, except: ReadonlySet<string>): Promise<number> {
  const { rows } = await sql<{ id: string }>`
    WITH RECURSIVE sub(id) AS (
      SELECT id FROM sandboxes WHERE id = ${rootId}
      UNION ALL
      SELECT c.id FROM sandboxes c JOIN sub ON c.parent_id = sub.id
    )
    SELECT s.id AS id FROM sandboxes s JOIN sub ON sub.id = s.id WHERE s.state NOT IN (${sql.join(deadStates.length > 0 ? deadStates : ['-'])})
    UNION ALL
    SELECT sandbox_id AS id FROM fork_tree_reservations WHERE budget_sandbox_id = ${rootId} AND expires_at > ${now}`.execute(db);
  return new Set(rows.map((r) => r.id).filter((id) => !except.has(id))).size;
}

/** See `TreeRoomStore.reserveTreeRoom`. */
export async function reserveTreeRoom(db: Executor, req: TreeRoomRequest): Promise<TreeRoomResult> {
  const budgets = [...new Set(req.budgetSandboxIds)].sort();
  if (budgets.length === 0 || req.childIds.length === 0) return { refused: null };
  return inTransaction(db, async (trx) => {
    if (dialectOf(trx) === 'postgres') await trx.selectFrom('sandbox_budgets').select('sandbox_id').where('sandbox_id', 'in', budgets).orderBy('sandbox_id').forUpdate().execute();
    const now = await databaseNow(trx);
    await trx.deleteFrom('fork_tree_reservations').where('budget_sandbox_id', 'in', budgets).where('expires_at', '<=', now).execute();
    const children = new Set(req.childIds);
    for (const budget of budgets) {
      const alive = await aliveIn(trx, budget, req.deadStates, now, children);
      if (!req.admits(budget, alive)) return { refused: { budgetSandboxId: budget, alive } };
    }
    const rows = budgets.flatMap((b) => req.childIds.map((id) => ({ budget_sandbox_id: b, sandbox_id: id, holder: req.holder, expires_at: now + req.leaseMs })));
    await trx.insertInto('fork_tree_reservations').values(rows).onConflict((oc) => oc.columns(['budget_sandbox_id', 'sandbox_id']).doUpdateSet((eb) => ({ holder: eb.ref('excluded.holder'), expires_at: eb.ref('excluded.expires_at') }))).execute();
    return { refused: null };
  });
}

export async function renewTreeRoom(db: Executor, childIds: readonly string[], leaseMs: number): Promise<void> {
  if (childIds.length === 0) return;
  const now = await databaseNow(db);
  await db.updateTable('fork_tree_reservations').set({ expires_at: now + leaseMs }).where('sandbox_id', 'in', childIds).where('expires_at', '>', now).execute();
}

export async function releaseTreeRoom(db: Executor, childIds: readonly string[]): Promise<void> {
  if (childIds.length === 0) return;
  await db.deleteFrom('fork_tree_reservations').where('sandbox_id', 'in', childIds).execute();
}
