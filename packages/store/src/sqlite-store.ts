/**
 * The embedded SQLite store: {@link SqlStore} over better-sqlite3 (WAL journal, foreign keys, numbered
 * migrations applied at open). One daemon process owns the file. Opening is synchronous (the file is
 * migrated before the constructor returns); every call then goes through kysely's SQLite dialect, one
 * connection, statements prepared once and kept.
 */
import { Kysely, SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';
import { openDatabase, type Db } from './db.js';
import type { Database } from './schema.js';
import { SqlStore, type StoreOptions } from './sql-store.js';

export { DEFAULT_MAX_SLOTS } from './sql-store.js';

export interface SqliteStoreOptions extends StoreOptions {
  /** Database file (created with its directory when absent), or `:memory:`. */
  path: string;
}

/** Prepared statements kept per connection (the store issues a few hundred distinct shapes at most). */
const STATEMENT_CACHE = 512;

/**
 * better-sqlite3 as kysely's dialect wants it, keeping prepared statements by their SQL: kysely prepares
 * each query it runs, and preparing costs more than running a short statement.
 */
function cachingDatabase(db: Db): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => {
      if (db.open) db.close();
    },
    prepare: (sql: string) => {
      let statement = cache.get(sql);
      if (statement) {
        cache.delete(sql);
      } else {
        statement = db.prepare(sql) as unknown as SqliteStatement;
        if (cache.size >= STATEMENT_CACHE) cache.delete(cache.keys().next().value as string);
      }
      cache.set(sql, statement);
      return statement;
    },
  };
}

/**
 * One process owns the file: room still reserved at open was held by calls of a process that ended (a
 * crash), so it is freed now rather than when its lease runs out. Read first (a clean stop leaves none,
 * and a read never waits); the delete does not wait either: another connection of this process writing
 * now (a test reopening a live store) would wait on this synchronous call, so then the leases expire as usual.
 */
function freeEndedReservations(db: Db): void {
  for (const table of ['quota_reservations', 'fork_tree_reservations']) {
    if (db.prepare(`SELECT 1 FROM ${table} LIMIT 1`).get() === undefined) continue;
    const timeout = db.pragma('busy_timeout', { simple: true }) as number;
    db.pragma('busy_timeout = 0');
    try {
      db.prepare(`DELETE FROM ${table}`).run();
    } catch {
      /* busy: they expire by their lease */
    } finally {
      db.pragma(`busy_timeout = ${timeout}`);
    }
  }
}

export class SqliteStore extends SqlStore {
  /** The better-sqlite3 handle under the store (tests inspect the file through it). */
  readonly db: Db;

  /** Open (and migrate) the database. @throws RamifyError `INTERNAL` for a schema newer than this code. */
  constructor(options: SqliteStoreOptions) {
    const db = openDatabase(options.path);
    freeEndedReservations(db);
    super(new Kysely<Database>({ dialect: new SqliteDialect({ database: cachingDatabase(db) }) }), 'sqlite', options);
    this.db = db;
  }
}
