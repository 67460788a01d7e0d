/**
 * A per-sandbox bounded log table (the egress log, the ingress log): rows in append order (`seq`), each
 * sandbox keeping its newest `maxEntries`. Appends count per sandbox and, every `trimEvery` of them, one
 * indexed DELETE drops the older rows. Reads never return more than `maxEntries`, so the slack between
 * trims is invisible. Entries of unknown sandboxes are skipped, and of killed ones unless the spec accepts them.
 */
import type { Db } from './db.js';

/** Largest page a read returns (the API's limit). */
const MAX_READ = 1000;

/** How one log's records map to its table. */
export interface BoundedLogSpec<R> {
  /** Table name (a constant of this package, never input). */
  table: string;
  /** Columns written, in the order {@link toRow} gives them (besides `seq`). The first is `sandbox_id`. */
  columns: readonly string[];
  toRow: (record: R) => unknown[];
  fromRow: (row: Record<string, unknown>) => R;
  /** Whose entries are kept: `live` sandboxes' (default), or any `known` sandbox's (killed ones too: the command log). */
  accepts?: 'live' | 'known';
}

export class BoundedLogRows<R extends { sandboxId: string }> {
  readonly #db: Db;
  readonly #spec: BoundedLogSpec<R>;
  readonly #maxEntries: number;
  readonly #trimEvery: number;
  /** Appends per sandbox since its last trim (in memory: after a restart the first trim comes a little later). */
  readonly #sinceTrim = new Map<string, number>();
  readonly #state;
  readonly #insert;
  readonly #trim;
  readonly #list;
  readonly #delete;

  /** `maxEntries`: rows kept per sandbox (at least 1). */
  constructor(db: Db, spec: BoundedLogSpec<R>, maxEntries: number) {
    const t = spec.table;
    this.#db = db;
    this.#spec = spec;
    this.#maxEntries = Math.max(1, Math.floor(maxEntries));
    this.#trimEvery = Math.max(1, Math.ceil(this.#maxEntries / 10));
    this.#state = db.prepare('SELECT state FROM sandboxes WHERE id = ?');
    this.#insert = db.prepare(`INSERT INTO ${t} (${spec.columns.join(', ')}) VALUES (${spec.columns.map(() => '?').join(', ')})`);
    // Everything at or below the seq of the (max+1)-th newest row; no such row (NULL) deletes nothing.
    this.#trim = db.prepare(`DELETE FROM ${t} WHERE sandbox_id = @sandboxId AND seq <= (SELECT seq FROM ${t} WHERE sandbox_id = @sandboxId ORDER BY seq DESC LIMIT 1 OFFSET @keep)`);
    this.#list = db.prepare(`SELECT * FROM ${t} WHERE sandbox_id = ? ORDER BY seq DESC LIMIT ?`);
    this.#delete = db.prepare(`DELETE FROM ${t} WHERE sandbox_id = ?`);
  }

  /** Append in one transaction, skipping unknown and killed sandboxes; returns the number stored. */
  append(entries: readonly R[]): number {
    if (entries.length === 0) return 0;
    return this.#db.transaction(() => {
      const live = new Map<string, boolean>();
      const added = new Map<string, number>();
      for (const e of entries) {
        let ok = live.get(e.sandboxId);
        if (ok === undefined) {
          const row = this.#state.get(e.sandboxId) as { state: string } | undefined;
          ok = row !== undefined && (this.#spec.accepts === 'known' || row.state !== 'killed');
          live.set(e.sandboxId, ok);
        }
        if (!ok) continue;
        this.#insert.run(...this.#spec.toRow(e));
        added.set(e.sandboxId, (added.get(e.sandboxId) ?? 0) + 1);
      }
      let stored = 0;
      for (const [sandboxId, count] of added) {
        stored += count;
        const since = (this.#sinceTrim.get(sandboxId) ?? 0) + count;
        if (since >= this.#trimEvery) {
          this.#trim.run({ sandboxId, keep: this.#maxEntries });
          this.#sinceTrim.delete(sandboxId);
        } else {
          this.#sinceTrim.set(sandboxId, since);
        }
      }
      return stored;
    })();
  }

  /** Newest first, at most `limit` (clamped to 1..min(1000, maxEntries)). */
  list(sandboxId: string, limit: number): R[] {
    const n = Math.min(Math.max(Math.floor(limit) || 1, 1), MAX_READ, this.#maxEntries);
    return (this.#list.all(sandboxId, n) as Array<Record<string, unknown>>).map(this.#spec.fromRow);
  }

  /** Forget the sandbox's whole log (it was killed). */
  deleteFor(sandboxId: string): void {
    this.#delete.run(sandboxId);
    this.#sinceTrim.delete(sandboxId);
  }
}
