/**
 * Budget rows (migration 19): one per sandbox a budget is set on, covering it and every sandbox forked
 * from it. `covering` walks each given sandbox's ancestors (a recursive query on `parent_id`).
 */
import { RamifyError, notFound } from '@ramify/contracts';
import type { BudgetRecord } from '@ramify/core';
import { sql, type Selectable } from 'kysely';
import type { Executor, SandboxBudgetsTable } from './schema.js';

type BudgetRow = Selectable<SandboxBudgetsTable>;

const fromRow = (r: BudgetRow): BudgetRecord => ({
  sandboxId: r.sandbox_id,
  teamId: r.team_id,
  cpuSeconds: r.cpu_seconds,
  sandboxSeconds: r.sandbox_seconds,
  maxSandboxes: r.max_sandboxes,
  since: r.since,
  baseCpuUs: r.base_cpu_us,
  baseRunningMs: r.base_running_ms,
  exceeded: r.exceeded as BudgetRecord['exceeded'],
  updatedAt: r.updated_at,
});

/** Insert or replace. @throws RamifyError `SANDBOX_NOT_FOUND` for an unknown sandbox. */
export async function putBudget(db: Executor, b: BudgetRecord): Promise<void> {
  if (!(await db.selectFrom('sandboxes').select('id').where('id', '=', b.sandboxId).executeTakeFirst())) {
    throw notFound('SANDBOX_NOT_FOUND', 'sandbox', b.sandboxId, { id: b.sandboxId });
  }
  const row = {
    sandbox_id: b.sandboxId, team_id: b.teamId, cpu_seconds: b.cpuSeconds, sandbox_seconds: b.sandboxSeconds, max_sandboxes: b.maxSandboxes, since: b.since,
    base_cpu_us: b.baseCpuUs, base_running_ms: b.baseRunningMs, exceeded: b.exceeded, updated_at: b.updatedAt,
  };
  const { sandbox_id: _id, ...replaced } = row;
  await db.insertInto('sandbox_budgets').values(row).onConflict((oc) => oc.column('sandbox_id').doUpdateSet(replaced)).execute();
}

export async function getBudget(db: Executor, sandboxId: string): Promise<BudgetRecord | null> {
  const row = await db.selectFrom('sandbox_budgets').selectAll().where('sandbox_id', '=', sandboxId).executeTakeFirst();
  return row ? fromRow(row) : null;
}

export async function deleteBudget(db: Executor, sandboxId: string): Promise<void> {
  await db.deleteFrom('sandbox_budgets').where('sandbox_id', '=', sandboxId).execute();
}

/** Budgets set on any of `ids` or on one of their ancestors, nearest first per sandbox, each once. */
export async function budgetsCovering(db: Executor, ids: readonly string[]): Promise<BudgetRecord[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .withRecursive('up(id, depth)', (qb) =>
      qb
        .selectFrom('sandboxes')
        .select(['id', sql<number>`0`.as('depth')])
        .where('id', 'in', ids)
        .union(qb.selectFrom('up').innerJoin('sandboxes as s', 's.id', 'up.id').select([sql<string>`s.parent_id`.as('id'), sql<number>`up.depth + 1`.as('depth')]).where('s.parent_id', 'is not', null)),
    )
    .with('a', (qb) => qb.selectFrom('up').select((eb) => ['id', eb.fn.min('depth').as('depth')]).groupBy('id'))
    .selectFrom('sandbox_budgets as b')
    .innerJoin('a', 'a.id', 'b.sandbox_id')
    .selectAll('b')
    .orderBy('a.depth')
    .orderBy('b.sandbox_id')
    .execute();
  return rows.map(fromRow);
}
