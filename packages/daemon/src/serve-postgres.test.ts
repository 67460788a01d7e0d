/**
 * `serve()` keeping its state in Postgres (`databaseUrl` / `RAMIFY_DATABASE_URL`): a throwaway
 * postgresql-15 cluster, the real store, core's FAKE runtime and network (store wiring only, NOT runtime
 * coverage). Skipped, saying why, without the Postgres binaries (not on CI, which installs them).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeNetwork, FakeRuntime, seedTemplate } from '@ramify/core/testing';
import { postgresForTests } from '@ramify/store/testsuite';
import { resolveDatabase } from './database.js';
import { serve } from './serve.js';

const cluster = await postgresForTests();
const dataDir = await mkdtemp(join(tmpdir(), 'ramify-daemon-pg-'));
after(() => rm(dataDir, { recursive: true, force: true }));

const runtime = new FakeRuntime();
const network = new FakeNetwork();
const overrides = { runtimes: [runtime], network, connectAgent: runtime.connectAgent, templateBuilder: null };

test('the database: the flag, else RAMIFY_DATABASE_URL, else SQLite in the data directory', () => {
  assert.deepEqual(resolveDatabase('/d', undefined, {}), { kind: 'sqlite', path: '/d/ramify.db' });
  assert.deepEqual(resolveDatabase('/d', '', { RAMIFY_DATABASE_URL: 'postgres://e/x' }), { kind: 'postgres', url: 'postgres://e/x' });
  assert.deepEqual(resolveDatabase('/d', 'postgres://f/y', { RAMIFY_DATABASE_URL: 'postgres://e/x' }), { kind: 'postgres', url: 'postgres://f/y' });
});

describe('serve() on Postgres (fake runtime: store wiring only)', { skip: 'skip' in cluster ? cluster.skip : false }, () => {
  if ('skip' in cluster) return;

  test('state lives in Postgres: the API key and a sandbox survive a restart; no SQLite file is made', async () => {
    const url = await cluster.ensureDatabase('daemon');
    const first = await serve({ dataDir, port: 0, logLevel: 'silent', print: () => undefined, databaseUrl: url, overrides });
    let id: string;
    try {
      assert.match(first.database, /^Postgres at postgres:\/\/postgres@127\.0\.0\.1:\d+\/daemon$/);
      assert.ok(first.newApiKey);
      await seedTemplate(first.core.store, first.core.storage, { files: {}, endpoints: [], identities: [] });
      const created = await fetch(`${first.url}/v1/sandboxes`, {
        method: 'POST', headers: { authorization: `Bearer ${first.newApiKey}`, 'content-type': 'application/json' }, body: '{"metadata":{"db":"pg"}}',
      });
      assert.equal(created.status, 201, await created.clone().text());
      id = ((await created.json()) as { id: string }).id;
    } finally {
      await first.close();
    }
    const second = await serve({ dataDir, port: 0, logLevel: 'silent', print: () => undefined, databaseUrl: url, overrides });
    try {
      assert.equal(second.newApiKey, null, 'the key made on the first start is in the database');
      const listed = await fetch(`${second.url}/v1/sandboxes?metadata=db%3Dpg`, { headers: { authorization: `Bearer ${first.newApiKey}` } });
      assert.equal(listed.status, 200);
      assert.deepEqual(((await listed.json()) as { sandboxes: Array<{ id: string }> }).sandboxes.map((s) => s.id), [id]);
      assert.ok(!(await readdir(dataDir)).some((f) => f.startsWith('ramify.db')), 'no SQLite file in the data directory');
    } finally {
      await second.close();
    }
  });

  test('an unreachable database stops the start with a message naming the server (not the password) and the fix', async () => {
    const badUrl = cluster.url('daemon').replace(/:(\d+)\//, ':1/').replace('postgres@', 'postgres:s3cret@');
    await assert.rejects(serve({ dataDir, port: 0, logLevel: 'silent', print: () => undefined, databaseUrl: badUrl, overrides }), (err: { code?: string; message?: string }) => {
      assert.equal(err.code, 'DATABASE_UNAVAILABLE');
      assert.match(err.message ?? '', /postgres:\/\/postgres@127\.0\.0\.1:1\/daemon/);
      assert.match(err.message ?? '', /start Postgres|RAMIFY_DATABASE_URL/);
      assert.doesNotMatch(err.message ?? '', /s3cret/);
      return true;
    });
  });
});
