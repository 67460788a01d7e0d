/**
 * A per-sandbox bounded log table (the egress log, the ingress log): rows in append order (`seq`), each
 * sandbox keeping its newest `maxEntries`. Appends count per sandbox and, every `trimEvery` of them, one
 * indexed DELETE drops the older rows. Reads never return more than `maxEntries`, so the slack between
 * trims is invisible. Entries of unknown sandboxes are skipped, and of killed ones unless the spec accepts them.
 */
import type { Generated, Insertable, Kysely } from 'kysely';
import { inTransaction, type Executor } from './schema.js';

/** Largest page a read returns (the API's limit). */
const MAX_READ = 1000;
/** Rows per INSERT statement (well under SQLite's and Postgres's bound on parameters of one statement). */
const INSERT_CHUNK = 500;

/** The tables kept this way. */
export type BoundedLogTable = 'egress_log' | 'ingress_log' | 'command_log';

/** What the bounded log needs of each table (its own columns are written by the spec). */
interface LogRow {
  seq: Generated<number>;
  sandbox_id: string;
}
type LogDb = Record<BoundedLogTable, LogRow>;

/** How one log's records map to its table. */
export interface BoundedLogSpec<R> {
  table: BoundedLogTable;
  /** The row to insert for a record: column → value (`seq` is assigned). */
  toRow: (record: R) => { sandbox_id: string } & Record<string, unknown>;
  fromRow: (row: Record<string, unknown>) => R;
  /** Whose entries are kept: `live` sandboxes' (default), or any `known` sandbox's (killed ones too: the command log). */
  accepts?: 'live' | 'known';
}

export class BoundedLogRows<R extends { sandboxId: string }> {
  readonly #db: Executor;
  readonly #spec: BoundedLogSpec<R>;
  readonly #maxEntries: number;
  readonly #trimEvery: number;
  /** Appends per sandbox since its last trim (in memory: after a restart the first trim comes a little later). */
  readonly #sinceTrim = new Map<string, number>();

  /** `maxEntries`: rows kept per sandbox (at least 1). */
  constructor(db: Executor, spec: BoundedLogSpec<R>, maxEntries: number) {
    this.#db = db;
    this.#spec = spec;
    this.#maxEntries = Math.max(1, Math.floor(maxEntries));
    this.#trimEvery = Math.max(1, Math.ceil(this.#maxEntries / 10));
  }

  /** The same database seen through the log tables' common columns. */
  #logs(db: Executor): Kysely<LogDb> {
    return db as unknown as Kysely<LogDb>;
  }

  /** Append in one transaction, skipping unknown and killed sandboxes; returns the number stored. */
  async append(entries: readonly R[]): Promise<number> {
    if (entries.length === 0) return 0;
    const t = this.#spec.table;
    return inTransaction(this.#db, async (trx) => {
      const states = new Map<string, string>();
      const ids = [...new Set(entries.map((e) => e.sandboxId))];
      for (const row of await trx.selectFrom('sandboxes').select(['id', 'state']).where('id', 'in', ids).execute()) states.set(row.id, row.state);
      const accepted = entries.filter((e) => {
        const state = states.get(e.sandboxId);
        return state !== undefined && (this.#spec.accepts === 'known' || state !== 'killed');
      });
      if (accepted.length === 0) return 0;
      for (let i = 0; i < accepted.length; i += INSERT_CHUNK) {
        const rows = accepted.slice(i, i + INSERT_CHUNK).map((e) => this.#spec.toRow(e) as unknown as Insertable<LogRow>);
        await this.#logs(trx).insertInto(t).values(rows).execute();
      }
      const added = new Map<string, number>();
      for (const e of accepted) added.set(e.sandboxId, (added.get(e.sandboxId) ?? 0) + 1);
      for (const [sandboxId, count] of added) {
        const since = (this.#sinceTrim.get(sandboxId) ?? 0) + count;
        if (since >= this.#trimEvery) {
          await this.#trim(trx, sandboxId);
          this.#sinceTrim.delete(sandboxId);
        } else {
          this.#sinceTrim.set(sandboxId, since);
        }
      }
      return accepted.length;
    });
  }

  /** Everything at or below the seq of the (max+1)-th newest row; no such row (NULL) deletes nothing. */
  async #trim(db: Executor, sandboxId: string): Promise<void> {
    const t = this.#spec.table;
    const logs = this.#logs(db);
    await logs
      .deleteFrom(t)
      .where('sandbox_id', '=', sandboxId)
      .where('seq', '<=', (eb) => eb.selectFrom(t).select('seq').where('sandbox_id', '=', sandboxId).orderBy('seq', 'desc').limit(1).offset(this.#maxEntries))
      .execute();
  }

  /** Newest first, at most `limit` (clamped to 1..min(1000, maxEntries)). */
  async list(sandboxId: string, limit: number): Promise<R[]> {
    const n = Math.min(Math.max(Math.floor(limit) || 1, 1), MAX_READ, this.#maxEntries);
    const t = this.#spec.table;
    const rows = await this.#logs(this.#db).selectFrom(t).selectAll().where('sandbox_id', '=', sandboxId).orderBy('seq', 'desc').limit(n).execute();
    return (rows as unknown as Array<Record<string, unknown>>).map(this.#spec.fromRow);
  }

  /** Forget the sandbox's whole log (it was killed); `db`: the kill's transaction. */
  async deleteFor(db: Executor, sandboxId: string): Promise<void> {
    await this.#logs(db).deleteFrom(this.#spec.table).where('sandbox_id', '=', sandboxId).execute();
    this.#sinceTrim.delete(sandboxId);
  }
}
