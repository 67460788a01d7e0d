/**
 * Ingress log rows: the requests the ingress served per sandbox, bounded as {@link BoundedLogRows}
 * describes (the newest `maxEntries` per sandbox), and each sandbox's count of wakes by a request
 * (columns of `sandboxes`, migration 12).
 */
import type { IngressLogRecord, IngressWakes } from '@ramify/core';
import type { Executor } from './schema.js';
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
  readonly #db: Executor;

  constructor(db: Executor, maxEntries: number) {
    super(db, {
      table: 'ingress_log',
      toRow: (e) => ({
        sandbox_id: e.sandboxId, at: e.at, client: e.client, method: e.method, path: e.path, port: e.port, status: e.status, bytes: e.bytes,
        duration_ms: e.durationMs, woke: e.woke ? 1 : 0,
      }),
      fromRow,
    }, maxEntries);
    this.#db = db;
  }

  /** Count one wake at `at` (ms); no-op for an unknown sandbox. */
  async recordWake(sandboxId: string, at: number): Promise<void> {
    await this.#db.updateTable('sandboxes').set((eb) => ({ ingress_wakeups: eb('ingress_wakeups', '+', 1), last_wake_at: at })).where('id', '=', sandboxId).execute();
  }

  async wakes(sandboxId: string): Promise<IngressWakes> {
    const row = await this.#db.selectFrom('sandboxes').select(['ingress_wakeups', 'last_wake_at']).where('id', '=', sandboxId).executeTakeFirst();
    return row ? { count: row.ingress_wakeups, lastAt: row.last_wake_at } : { count: 0, lastAt: null };
  }
}
