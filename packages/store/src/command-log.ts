/**
 * Command log rows (migration 20): the commands seen to end in each sandbox, the newest 1000 per sandbox
 * ({@link BoundedLogRows}), kept after a kill (a timeline outlives its sandbox), pruned by age.
 */
import type { CommandLogRecord } from '@ramify/core';
import type { Db } from './db.js';
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
  readonly #prune;

  constructor(db: Db) {
    super(db, {
      table: 'command_log',
      columns: ['sandbox_id', 'at', 'pid', 'cmd', 'exit_code', 'signal', 'error', 'duration_ms', 'key_id'],
      toRow: (e) => [e.sandboxId, e.at, e.pid, e.cmd, e.exitCode, e.signal, e.error, e.durationMs, e.keyId],
      fromRow,
      accepts: 'known',
    }, COMMAND_LOG_MAX_ENTRIES);
    this.#prune = db.prepare('DELETE FROM command_log WHERE at < ?');
  }

  /** Delete entries that started before `before`; returns how many. */
  prune(before: number): number {
    return this.#prune.run(before).changes;
  }
}
