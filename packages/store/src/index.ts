/**
 * @ramify/store: persistence for Ramify's control plane. One implementation of core's `Store` port
 * ({@link SqlStore}, kysely) on SQLite (`SqliteStore`, the single-machine default) or Postgres
 * (`openPostgresStore`, shared by several processes); `openStore` picks by configuration.
 */
export { SqlStore, DEFAULT_MAX_SLOTS, type StoreOptions } from './sql-store.js';
export { SqliteStore, type SqliteStoreOptions } from './sqlite-store.js';
export { openPostgresStore, describeDatabaseUrl, type PostgresStoreOptions } from './postgres-store.js';
export { openStore, type StoreConfig } from './open-store.js';
export { openDatabase, migrate, appliedMigrations, pendingMigrations, type Db } from './db.js';
export { DEFAULT_EGRESS_LOG_MAX_ENTRIES } from './egress-log.js';
export { DEFAULT_INGRESS_LOG_MAX_ENTRIES } from './ingress-log.js';
export { MIGRATIONS, type Migration } from './migrations.js';
export type { Database, DialectName } from './schema.js';
