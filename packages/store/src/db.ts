/**
 * Opening the SQLite database: WAL journal, foreign keys on, busy timeout, then pending migrations.
 */
import { chmodSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { RamifyError } from '@ramify/contracts';
import { MIGRATIONS, type Migration } from './migrations.js';

export type Db = Database.Database;

/**
 * Open (creating when absent, mode 0600) and migrate the database at `path`.
 * @throws RamifyError `INTERNAL` when the file's schema is newer than this code knows.
 */
export function openDatabase(path: string, migrations: readonly Migration[] = MIGRATIONS): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const db = new Database(path);
  if (path !== ':memory:') chmodSync(path, 0o600);
  db.pragma('journal_mode = WAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  db.pragma('synchronous = NORMAL');
  migrate(db, migrations);
  return db;
}

/**
 * Apply every migration not recorded yet, in version order, each in its own transaction. Not only those
 * above the highest recorded: numbers are handed out to branches developed side by side, so a database
 * may have met a higher number first (20 from one branch, then 19 from another merged after it).
 */
export function migrate(db: Db, migrations: readonly Migration[]): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  for (const migration of pendingMigrations(appliedMigrations(db), migrations)) {
    db.transaction(() => {
      db.exec(migration.sql);
      record.run(migration.version, migration.name, Date.now());
    })();
  }
}

/**
 * The migrations to apply, in version order: every one whose version is not in `applied` (both databases'
 * runners use this).
 * @throws RamifyError `INTERNAL` when a version applied is newer than every one this code knows.
 */
export function pendingMigrations(applied: readonly number[], migrations: readonly Migration[]): Migration[] {
  const current = Math.max(0, ...applied);
  const known = Math.max(0, ...migrations.map((m) => m.version));
  if (current > known) {
    throw new RamifyError('INTERNAL', `database schema version ${current} is newer than this Ramify (knows up to ${known}); upgrade Ramify`);
  }
  const done = new Set(applied);
  return [...migrations].sort((a, b) => a.version - b.version).filter((m) => !done.has(m.version));
}

/** Versions applied so far, ascending. */
export function appliedMigrations(db: Db): number[] {
  return (db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as Array<{ version: number }>).map((r) => r.version);
}

/**
 * Rows that pin a root filesystem must name one (migration 2 gives pre-existing rows a default, never new ones).
 * @throws RamifyError `INTERNAL` when `rootfsDir` is empty.
 */
export function requireRootfs(rootfsDir: string, what: string): void {
  if (typeof rootfsDir !== 'string' || rootfsDir === '') throw new RamifyError('INTERNAL', `${what} has no root filesystem directory (rootfsDir)`);
}
