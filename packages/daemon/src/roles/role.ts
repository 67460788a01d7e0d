/**
 * The roles of one binary (issue 16, docs/design/SCALE-OUT.md): `single` (plain `ramify serve`: everything
 * in one process, SQLite and local snapshots by default), `api` (no runtimes, no networking: serves `any`
 * routes from the shared store, places creates and forwards calls on sandboxes to their hosts) and `host`
 * (runtimes, networking; registers in the store's host registry, heartbeats, drains on SIGTERM). Several
 * processes share state only through Postgres and snapshots only through S3, so `api` and `host` need both.
 */
import { RamifyError } from '@ramify/contracts';
import type { StoreConfig } from '@ramify/store';
import type { SnapshotStorageConfig } from '../snapshot-storage.js';

/** See the module doc. */
export type ServeRole = 'single' | 'api' | 'host';

/**
 * Check what role `role` needs.
 * @throws RamifyError VALIDATION_FAILED naming the missing setting and how to give it: `api`/`host` without
 *   Postgres or S3 snapshot storage; `host` without an advertised URL (or one that is not http(s)).
 */
export function checkRoleConfig(role: ServeRole, config: { database: StoreConfig; storage: SnapshotStorageConfig; advertiseUrl?: string | undefined }): void {
  if (role === 'single') return;
  if (config.database.kind !== 'postgres') {
    throw new RamifyError('VALIDATION_FAILED', `--role ${role} needs the shared database: give --database-url postgres://... (or RAMIFY_DATABASE_URL); every API and host process must use the same one`, { field: 'databaseUrl' });
  }
  if (config.storage.kind !== 's3') {
    throw new RamifyError('VALIDATION_FAILED', `--role ${role} needs snapshot storage on S3 (a paused sandbox resumes on another host from there): give --s3-bucket (or RAMIFY_S3_BUCKET) with its endpoint and credentials`, { field: 's3Bucket' });
  }
  if (role !== 'host') return;
  let url: URL | null = null;
  try {
    url = config.advertiseUrl ? new URL(config.advertiseUrl) : null;
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new RamifyError('VALIDATION_FAILED', `--role host needs --advertise-url http://ADDRESS:PORT, where API processes reach this host's API listener${config.advertiseUrl ? ` ('${config.advertiseUrl}' is not an http(s) URL)` : ''}`, { field: 'advertiseUrl' });
  }
}
