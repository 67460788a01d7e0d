/**
 * @ramify/store: persistence for Ramify's control plane. `SqliteStore` implements core's `Store` port.
 */
export { SqliteStore, DEFAULT_MAX_SLOTS, type SqliteStoreOptions } from './sqlite-store.js';
export { openDatabase, migrate, appliedMigrations, type Db } from './db.js';
export { DEFAULT_EGRESS_LOG_MAX_ENTRIES } from './egress-log.js';
export { DEFAULT_INGRESS_LOG_MAX_ENTRIES } from './ingress-log.js';
export { MIGRATIONS, type Migration } from './migrations.js';
