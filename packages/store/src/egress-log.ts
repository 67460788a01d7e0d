/**
 * Egress log rows: the verdicts host enforcement recorded, per sandbox, in append order (`seq`). Each
 * sandbox keeps its newest `maxEntries` rows: appends count per sandbox and, every `trimEvery` of them, one
 * indexed DELETE drops the older rows. Reads never return more than `maxEntries`, so the slack between
 * trims is invisible.
 */
import type { EgressLogRecord } from '@ramify/core';
import type { Db } from './db.js';

/** Default number of entries kept per sandbox. */
export const DEFAULT_EGRESS_LOG_MAX_ENTRIES = 1000;

/** Largest page a read returns (the API's limit). */
const MAX_READ = 1000;

interface EgressLogRow {
  seq: number;
  sandbox_id: string;
  at: number;
  protocol: string;
  destination: string;
  port: number | null;
  name: string | null;
  verdict: string;
  rule: string | null;
}

const fromRow = (r: EgressLogRow): EgressLogRecord => ({
  sandboxId: r.sandbox_id,
  at: r.at,
  protocol: r.protocol as EgressLogRecord['protocol'],
  destination: r.destination,
  port: r.port,
  name: r.name,
  verdict: r.verdict as EgressLogRecord['verdict'],
  rule: r.rule,
});

export class EgressLogRows {
  readonly #db: Db;
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
  constructor(db: Db, maxEntries: number) {
    this.#db = db;
    this.#maxEntries = Math.max(1, Math.floor(maxEntries));
    this.#trimEvery = Math.max(1, Math.ceil(this.#maxEntries / 10));
    this.#state = db.prepare('SELECT state FROM sandboxes WHERE id = ?');
    this.#insert = db.prepare(
      'INSERT INTO egress_log (sandbox_id, at, protocol, destination, port, name, verdict, rule) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    // Everything at or below the seq of the (max+1)-th newest row; no such row (NULL) deletes nothing.
    this.#trim = db.prepare(
      `DELETE FROM egress_log WHERE sandbox_id = @sandboxId AND seq <= (
         SELECT seq FROM egress_log WHERE sandbox_id = @sandboxId ORDER BY seq DESC LIMIT 1 OFFSET @keep)`,
    );
    this.#list = db.prepare('SELECT * FROM egress_log WHERE sandbox_id = ? ORDER BY seq DESC LIMIT ?');
    this.#delete = db.prepare('DELETE FROM egress_log WHERE sandbox_id = ?');
  }

  /** Append in one transaction, skipping unknown and killed sandboxes; returns the number stored. */
  append(entries: readonly EgressLogRecord[]): number {
    if (entries.length === 0) return 0;
    return this.#db.transaction(() => {
      const live = new Map<string, boolean>();
      const added = new Map<string, number>();
      for (const e of entries) {
        let ok = live.get(e.sandboxId);
        if (ok === undefined) {
          const row = this.#state.get(e.sandboxId) as { state: string } | undefined;
          ok = row !== undefined && row.state !== 'killed';
          live.set(e.sandboxId, ok);
        }
        if (!ok) continue;
        this.#insert.run(e.sandboxId, e.at, e.protocol, e.destination, e.port, e.name, e.verdict, e.rule);
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
  list(sandboxId: string, limit: number): EgressLogRecord[] {
    const n = Math.min(Math.max(Math.floor(limit) || 1, 1), MAX_READ, this.#maxEntries);
    return (this.#list.all(sandboxId, n) as EgressLogRow[]).map(fromRow);
  }

  /** Forget the sandbox's whole log (it was killed). */
  deleteFor(sandboxId: string): void {
    this.#delete.run(sandboxId);
    this.#sinceTrim.delete(sandboxId);
  }
}
