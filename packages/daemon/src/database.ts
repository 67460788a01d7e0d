/**
 * Where the daemon keeps its state: SQLite in the data directory (the single-machine default, nothing
 * else to run) or Postgres at a URL (`ramify serve --database-url`, else `RAMIFY_DATABASE_URL`), the
 * shared state of several Ramify processes. docs/design/STORE.md.
 */
import { join } from 'node:path';
import { describeDatabaseUrl, type StoreConfig } from '@ramify/store';

/**
 * The store configuration: the flag, else the environment variable, else SQLite at `<dataDir>/ramify.db`.
 * An empty value counts as absent. The URL is checked when it is opened (`DATABASE_UNAVAILABLE` or `VALIDATION_FAILED`).
 */
export function resolveDatabase(dataDir: string, databaseUrl: string | undefined, env: NodeJS.ProcessEnv = process.env): StoreConfig {
  const url = databaseUrl || env.RAMIFY_DATABASE_URL || '';
  return url ? { kind: 'postgres', url } : { kind: 'sqlite', path: join(dataDir, 'ramify.db') };
}

/** One line saying where state lives (the URL without its password), for `ramify serve`'s start-up notes. */
export function describeDatabase(config: StoreConfig): string {
  return config.kind === 'postgres' ? `Postgres at ${describeDatabaseUrl(config.url)}` : `SQLite (${config.path})`;
}
