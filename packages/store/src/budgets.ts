/**
 * Budget rows (migration 19): one per sandbox a budget is set on, covering it and every sandbox forked
 * from it. `covering` walks each given sandbox's ancestors (a recursive query on `parent_id`).
 */
import { RamifyError } from '@ramify/contracts';
import type { BudgetRecord } from '@ramify/core';
import type { Db } from './db.js';

interface BudgetRow {
  sandbox_id: string;
  team_id: string;
  cpu_seconds: number | null;
  sandbox_seconds: number | null;
  max_sandboxes: number | null;
  since: number;
  base_cpu_us: number;
  base_running_ms: number;
  exceeded: string | null;
  updated_at: number;
}

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

export class BudgetRows {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  /** @throws RamifyError `SANDBOX_NOT_FOUND` for an unknown sandbox. */
  put(b: BudgetRecord): void {
    if (!this.#db.prepare('SELECT 1 FROM sandboxes WHERE id = ?').get(b.sandboxId)) {
      throw new RamifyError('SANDBOX_NOT_FOUND', `sandbox '${b.sandboxId}' not found`, { id: b.sandboxId });
    }
    this.#db
      .prepare(
        `INSERT OR REPLACE INTO sandbox_budgets (sandbox_id, team_id, cpu_seconds, sandbox_seconds, max_sandboxes, since, base_cpu_us, base_running_ms, exceeded, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(b.sandboxId, b.teamId, b.cpuSeconds, b.sandboxSeconds, b.maxSandboxes, b.since, b.baseCpuUs, b.baseRunningMs, b.exceeded, b.updatedAt);
  }

  get(sandboxId: string): BudgetRecord | null {
    const row = this.#db.prepare('SELECT * FROM sandbox_budgets WHERE sandbox_id = ?').get(sandboxId) as BudgetRow | undefined;
    return row ? fromRow(row) : null;
  }

  delete(sandboxId: string): void {
    this.#db.prepare('DELETE FROM sandbox_budgets WHERE sandbox_id = ?').run(sandboxId);
  }

  /** Budgets set on any of `ids` or on one of their ancestors, nearest first per sandbox, each once. */
  covering(ids: readonly string[]): BudgetRecord[] {
    if (ids.length === 0) return [];
    const rows = this.#db
      .prepare(
        `WITH RECURSIVE up(id, depth) AS (
           SELECT id, 0 FROM sandboxes WHERE id IN (${ids.map(() => '?').join(', ')})
           UNION SELECT s.parent_id, up.depth + 1 FROM up JOIN sandboxes s ON s.id = up.id WHERE s.parent_id IS NOT NULL)
         SELECT b.* FROM sandbox_budgets b JOIN (SELECT id, MIN(depth) AS depth FROM up GROUP BY id) a ON a.id = b.sandbox_id ORDER BY a.depth, b.sandbox_id`,
      )
      .all(...ids) as BudgetRow[];
    return rows.map(fromRow);
  }
}
