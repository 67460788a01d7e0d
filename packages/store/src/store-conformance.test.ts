/**
 * The Store conformance suite against SQLite (real files, always) and Postgres (a throwaway cluster of
 * Debian's postgresql-15; skipped, saying why, where its binaries are absent, except on CI where it must run).
 */
import { after } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPostgresStore, SqliteStore } from './index.js';
import { postgresForTests, storeConformance } from './testsuite/index.js';

const dir = mkdtempSync(join(tmpdir(), 'ramify-store-conformance-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// Every await comes before any case is registered: cases registered first can all finish while initdb or the
// migrations run, and the runner then ends the file (stopping the cluster) before the Postgres cases exist.
const cluster = await postgresForTests();
if (!('skip' in cluster)) {
  // Migrated once; each case's database is a copy of it (a file copy, instead of running every migration again).
  await (await openPostgresStore({ url: await cluster.ensureDatabase('migrated') })).close();
}

storeConformance({
  name: 'SQLite',
  open: async (name, options) => new SqliteStore({ ...options, path: join(dir, `${name}.db`) }),
});
if ('skip' in cluster) {
  storeConformance({ name: 'Postgres', skip: cluster.skip, open: () => Promise.reject(new Error(cluster.skip)) });
} else {
  storeConformance({
    name: cluster.name,
    open: async (name, options) => openPostgresStore({ ...options, url: await cluster.ensureDatabase(`t_${name}`, 'migrated') }),
  });
}
