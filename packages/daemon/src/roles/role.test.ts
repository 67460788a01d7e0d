/**
 * The roles' start-up checks: `api` and `host` need Postgres and S3, `host` an advertised URL; `single`
 * needs neither. Through `serve()`, which refuses before it opens anything (no database is reached here).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '../serve.js';
import { checkRoleConfig } from './role.js';

const postgres = { kind: 'postgres', url: 'postgres://ramify@db:5432/ramify' } as const;
const s3 = { kind: 's3', connection: { bucket: 'b', region: 'us-east-1' }, cacheBudgetBytes: null } as const;

test('single needs nothing; api and host need Postgres and S3; host an http(s) advertised URL', () => {
  assert.doesNotThrow(() => checkRoleConfig('single', { database: { kind: 'sqlite', path: '/x' }, storage: { kind: 'local' } }));
  assert.throws(() => checkRoleConfig('api', { database: { kind: 'sqlite', path: '/x' }, storage: s3 }), (err: { code?: string; message?: string }) =>
    err.code === 'VALIDATION_FAILED' && /--role api needs the shared database: give --database-url/.test(err.message ?? ''));
  assert.throws(() => checkRoleConfig('host', { database: postgres, storage: { kind: 'local' } }), /--role host needs snapshot storage on S3 .*: give --s3-bucket/);
  assert.doesNotThrow(() => checkRoleConfig('api', { database: postgres, storage: s3 }));
  assert.throws(() => checkRoleConfig('host', { database: postgres, storage: s3 }), /--role host needs --advertise-url/);
  assert.throws(() => checkRoleConfig('host', { database: postgres, storage: s3, advertiseUrl: 'ftp://h' }), /'ftp:\/\/h' is not an http\(s\) URL/);
  assert.doesNotThrow(() => checkRoleConfig('host', { database: postgres, storage: s3, advertiseUrl: 'http://10.0.0.5:7423' }));
});

test('serve() refuses a role without its settings before it opens anything', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'ramify-role-'));
  try {
    await assert.rejects(serve({ dataDir, port: 0, logLevel: 'silent', role: 'api', databaseUrl: '' }), { code: 'VALIDATION_FAILED' });
    await assert.rejects(serve({ dataDir, port: 0, logLevel: 'silent', role: 'host', databaseUrl: 'postgres://ramify@127.0.0.1:1/ramify', snapshotStorage: { s3Bucket: '' } }), { code: 'VALIDATION_FAILED' });
    assert.deepEqual(await readdir(dataDir), [], 'no database file, no snapshot directory');
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});
