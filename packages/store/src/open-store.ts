/**
 * Opening the store the configuration names: SQLite under the data directory (the single-machine
 * default) or Postgres at a URL (`RAMIFY_DATABASE_URL`, `ramify serve --database-url`).
 */
import type { Store } from '@ramify/core';
import { openPostgresStore } from './postgres-store.js';
import { SqliteStore } from './sqlite-store.js';
import type { StoreOptions } from './sql-store.js';

/** Where state lives. */
export type StoreConfig = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

/**
 * Open (and migrate) the configured database.
 * @throws RamifyError `DATABASE_UNAVAILABLE` when Postgres cannot be reached or refuses the credentials (the message says how to fix it).
 */
export async function openStore(config: StoreConfig, options: StoreOptions = {}): Promise<Store> {
  return config.kind === 'postgres' ? openPostgresStore({ ...options, url: config.url }) : new SqliteStore({ ...options, path: config.path });
}
