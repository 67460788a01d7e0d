/**
 * Command log rows (migration 20): the commands seen to end in each sandbox, the newest 1000 per sandbox
 * ({@link BoundedLogRows}), kept after a kill (a timeline outlives its sandbox), pruned by age.
 */
import type { CommandLogRecord } from '@ramify/core';
import type { Executor } from './schema.js';
import { BoundedLogRows } from './bounded-log.js';

/** Commands kept per sandbox. */
export const COMMAND_LOG_MAX_ENTRIES = 1000;

const fromRow = (r: Record<string, unknown>): CommandLogRecord => ({
  sandboxId: r.sandbox_id as string,
  at: r.at as number,
  pid: r.pid as number,
  cmd: r.cmd as string,
  exitCode: r.exit_code as number | null,
  signal: r.signal as string | null,
  error: r.error as string | null,
  durationMs: r.duration_ms as number,
  keyId: r.key_id as string | null,
});

export class CommandLogRows extends BoundedLogRows<CommandLogRecord> {
  readonly #db: Executor;

  constructor(db: Executor) {
    super(db, {
      table: 'command_log',
      toRow: (e) => ({
        sandbox_id: e.sandboxId, at: e.at, pid: e.pid, cmd: e.cmd, exit_code: e.exitCode, signal: e.signal, error: e.error, duration_ms: e.durationMs, key_id: e.keyId,
      }),
      fromRow,
      accepts: 'known',
    }, COMMAND_LOG_MAX_ENTRIES);
    this.#db = db;
  }

  /** Delete entries that started before `before`; returns how many. */
  async prune(before: number): Promise<number> {
    return Number((await this.#db.deleteFrom('command_log').where('at', '<', before).executeTakeFirst()).numDeletedRows);
  }
}
