/**
 * The Store conformance suite against SQLite (real files, always) and Postgres (a throwaway cluster of
 * Debian's postgresql-15; skipped, saying why, where its binaries are absent, except on CI where it must run).
 */
import { after } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPostgresStore, SqliteStore } from './index.js';
import { startPostgresCluster, storeConformance } from './testsuite/index.js';

const dir = mkdtempSync(join(tmpdir(), 'ramify-store-conformance-'));
after(() => rmSync(dir, { recursive: true, force: true }));

storeConformance({
  name: 'SQLite',
  open: async (name, options) => new SqliteStore({ ...options, path: join(dir, `${name}.db`) }),
});

const cluster = await startPostgresCluster();
if ('skip' in cluster) {
  if (process.env.CI) throw new Error(`CI must run the Postgres cases: ${cluster.skip}`);
  storeConformance({ name: 'Postgres', skip: cluster.skip, open: () => Promise.reject(new Error(cluster.skip)) });
} else {
  after(() => cluster.stop());
  // Migrated once; each case's database is a copy of it (a file copy, instead of running every migration again).
  await (await openPostgresStore({ url: await cluster.ensureDatabase('migrated') })).close();
  storeConformance({
    name: cluster.name,
    open: async (name, options) => openPostgresStore({ ...options, url: await cluster.ensureDatabase(`t_${name}`, 'migrated') }),
  });
}
