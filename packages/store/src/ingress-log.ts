/**
 * Ingress log rows: the requests the ingress served per sandbox, bounded as {@link BoundedLogRows}
 * describes (the newest `maxEntries` per sandbox), and each sandbox's count of wakes by a request
 * (columns of `sandboxes`, migration 12).
 */
import type { IngressLogRecord, IngressWakes } from '@ramify/core';
import type { Db } from './db.js';
import { BoundedLogRows } from './bounded-log.js';

/** Default number of entries kept per sandbox. */
export const DEFAULT_INGRESS_LOG_MAX_ENTRIES = 1000;

const fromRow = (r: Record<string, unknown>): IngressLogRecord => ({
  sandboxId: r.sandbox_id as string,
  at: r.at as number,
  client: r.client as string,
  method: r.method as string,
  path: r.path as string,
  port: r.port as number,
  status: r.status as number,
  bytes: r.bytes as number,
  durationMs: r.duration_ms as number,
  woke: r.woke === 1,
});

/** The ingress log table (migration 12). */
export class IngressLogRows extends BoundedLogRows<IngressLogRecord> {
  readonly #wake;
  readonly #wakes;

  constructor(db: Db, maxEntries: number) {
    super(db, {
      table: 'ingress_log',
      columns: ['sandbox_id', 'at', 'client', 'method', 'path', 'port', 'status', 'bytes', 'duration_ms', 'woke'],
      toRow: (e) => [e.sandboxId, e.at, e.client, e.method, e.path, e.port, e.status, e.bytes, e.durationMs, e.woke ? 1 : 0],
      fromRow,
    }, maxEntries);
    this.#wake = db.prepare('UPDATE sandboxes SET ingress_wakeups = ingress_wakeups + 1, last_wake_at = ? WHERE id = ?');
    this.#wakes = db.prepare('SELECT ingress_wakeups AS count, last_wake_at AS lastAt FROM sandboxes WHERE id = ?');
  }

  /** Count one wake at `at` (ms); no-op for an unknown sandbox. */
  recordWake(sandboxId: string, at: number): void {
    this.#wake.run(at, sandboxId);
  }

  wakes(sandboxId: string): IngressWakes {
    const row = this.#wakes.get(sandboxId) as { count: number; lastAt: number | null } | undefined;
    return row ? { count: row.count, lastAt: row.lastAt } : { count: 0, lastAt: null };
  }
}
