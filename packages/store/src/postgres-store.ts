/**
 * The Postgres store: {@link SqlStore} over a `pg` pool, for several Ramify processes sharing one database.
 * Opening connects once (a clear error naming the server and the fix when it cannot), then applies the
 * pending migrations under an advisory lock, so processes starting together migrate once, in turn.
 */
import { RamifyError } from '@ramify/contracts';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { pendingMigrations } from './db.js';
import { PgEventNotifications } from './event-notify.js';
import { MIGRATIONS, type Migration } from './migrations.js';
import type { Database, Executor } from './schema.js';
import { SqlStore, type StoreOptions } from './sql-store.js';

export interface PostgresStoreOptions extends StoreOptions {
  /** `postgres://user:password@host:port/database` (libpq's URL form; `?sslmode=` and the like as `pg` reads them). */
  url: string;
  /** Connections in the pool. Default 10. */
  poolSize?: number;
  /** How long to wait for a connection at open and later, ms. Default 5000. */
  connectTimeoutMs?: number;
}

/** pg_advisory_lock key taken while migrating (any constant: "ramify" in ASCII). */
const MIGRATION_LOCK = 0x72616d696679;

/** OIDs the pool reads as JS numbers: int8 (BIGINT: ms, bytes, counters) and numeric (SUM of BIGINT). Safe below 2^53. */
const NUMBER_TYPES = new Set([20, 1700]);

const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    NUMBER_TYPES.has(oid) ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** The URL without its password, for messages and logs. */
export function describeDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '';
    return parsed.toString().replace(/:@/, '@');
  } catch {
    return '(an unparsable database URL)';
  }
}

/**
 * Connect, check the server answers, migrate, and return the store.
 * @throws RamifyError `DATABASE_UNAVAILABLE` naming the server (without password), what failed and how to fix it;
 * `VALIDATION_FAILED` for a URL that is not `postgres://`; `INTERNAL` for a schema newer than this code.
 */
export async function openPostgresStore(options: PostgresStoreOptions, migrations: readonly Migration[] = MIGRATIONS): Promise<SqlStore> {
  if (!/^postgres(ql)?:\/\//.test(options.url)) {
    throw new RamifyError('VALIDATION_FAILED', `database URL ${describeDatabaseUrl(options.url)} is not a postgres:// URL (e.g. postgres://ramify:secret@db.internal:5432/ramify)`);
  }
  const pool = new pg.Pool({ connectionString: options.url, max: options.poolSize ?? 10, connectionTimeoutMillis: options.connectTimeoutMs ?? 5000, types });
  // An idle client's error (the server restarted) must not crash the process: the pool drops the client.
  pool.on('error', () => undefined);
  try {
    await pool.query('SELECT 1');
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw unavailable(options.url, err);
  }
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  try {
    await migratePostgres(kysely, migrations);
  } catch (err) {
    await kysely.destroy();
    throw err;
  }
  const eventNotifications = new PgEventNotifications(() => new pg.Client({ connectionString: options.url, connectionTimeoutMillis: options.connectTimeoutMs ?? 5000, types }));
  return new SqlStore(kysely, 'postgres', options, { eventNotifications });
}

/**
 * Apply every migration not recorded yet (as SQLite's `migrate`: any unrecorded number, in order), each in
 * its own transaction, holding a session advisory lock so that concurrent openers wait and then find them applied.
 */
export async function migratePostgres(kysely: Executor, migrations: readonly Migration[]): Promise<void> {
  await kysely.connection().execute(async (conn) => {
    await sql`SELECT pg_advisory_lock(${MIGRATION_LOCK})`.execute(conn);
    try {
      await sql`CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`.execute(conn);
      const applied = (await conn.selectFrom('schema_migrations').select('version').orderBy('version').execute()).map((r) => Number(r.version));
      for (const migration of pendingMigrations(applied, migrations)) {
        await sql`BEGIN`.execute(conn);
        try {
          await sql.raw(migration.postgres ?? migration.sql).execute(conn);
          await conn.insertInto('schema_migrations').values({ version: migration.version, name: migration.name, applied_at: Date.now() }).execute();
          await sql`COMMIT`.execute(conn);
        } catch (err) {
          await sql`ROLLBACK`.execute(conn);
          throw new RamifyError('INTERNAL', `database migration ${migration.version} (${migration.name}) failed on Postgres: ${(err as Error).message}`);
        }
      }
    } finally {
      await sql`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`.execute(conn);
    }
  });
}

/** What failed, in words a person can act on. */
function unavailable(url: string, err: unknown): RamifyError {
  const where = describeDatabaseUrl(url);
  const code = String((err as { code?: unknown }).code ?? '');
  const reason = (err as Error).message || code;
  let fix: string;
  if (code === '28P01' || code === '28000') fix = 'the server refused the user or password: correct them in RAMIFY_DATABASE_URL (or --database-url), or grant access in pg_hba.conf';
  else if (code === '3D000') fix = `the database does not exist: create it (createdb -h HOST -U USER DBNAME) or name an existing one in the URL`;
  else if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH' || /timeout/i.test(reason)) {
    fix = 'nothing answered there: start Postgres (e.g. systemctl start postgresql) or correct the host and port in RAMIFY_DATABASE_URL (or --database-url)';
  } else fix = 'check the URL in RAMIFY_DATABASE_URL (or --database-url) and that the server accepts connections (psql "URL" -c "select 1")';
  return new RamifyError('DATABASE_UNAVAILABLE', `cannot open the database at ${where}: ${reason}; ${fix}`, { url: where, ...(code ? { cause: code } : {}) });
}
