/**
 * Team rows (migration 17): the id, when it was made, and its quota (a NULL column: no limit).
 */
import { RamifyError } from '@ramify/contracts';
import type { TeamRecord } from '@ramify/core';
import { conflictOnConstraint, type Db } from './db.js';

interface TeamRow {
  id: string;
  created_at: number;
  max_running: number | null;
  max_memory_mb: number | null;
  max_forks_per_call: number | null;
}

const teamFromRow = (r: TeamRow): TeamRecord => ({
  id: r.id,
  createdAt: r.created_at,
  quota: { maxRunning: r.max_running, maxMemoryMB: r.max_memory_mb, maxForksPerCall: r.max_forks_per_call },
});

export class TeamRows {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }
  /** @throws RamifyError `CONFLICT` (id taken, or refused by the table's checks). */
  insert(t: TeamRecord): void {
    try {
      this.#db
        .prepare('INSERT INTO teams (id, created_at, max_running, max_memory_mb, max_forks_per_call) VALUES (?, ?, ?, ?, ?)')
        .run(t.id, t.createdAt, t.quota.maxRunning, t.quota.maxMemoryMB, t.quota.maxForksPerCall);
    } catch (err) {
      conflictOnConstraint(err, `team '${t.id}' already exists`);
    }
  }
  get(id: string): TeamRecord | null {
    const row = this.#db.prepare('SELECT * FROM teams WHERE id = ?').get(id) as TeamRow | undefined;
    return row ? teamFromRow(row) : null;
  }
  list(): TeamRecord[] {
    return (this.#db.prepare('SELECT * FROM teams ORDER BY id').all() as TeamRow[]).map(teamFromRow);
  }
  /** @throws RamifyError `TEAM_NOT_FOUND`. */
  setQuota(id: string, quota: TeamRecord['quota']): TeamRecord {
    const result = this.#db
      .prepare('UPDATE teams SET max_running = ?, max_memory_mb = ?, max_forks_per_call = ? WHERE id = ?')
      .run(quota.maxRunning, quota.maxMemoryMB, quota.maxForksPerCall, id);
    const updated = result.changes === 0 ? null : this.get(id);
    if (!updated) throw new RamifyError('TEAM_NOT_FOUND', `team '${id}' not found`, { id });
    return updated;
  }
}
