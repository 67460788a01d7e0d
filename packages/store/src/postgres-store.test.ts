/**
 * What only the Postgres store has: the same schema as SQLite's from the one migration history, migrations
 * applied once when several processes open the database at once, and clear errors for a database that
 * cannot be opened. Runs a throwaway postgresql-15 cluster (skipped, saying why, without its binaries; not on CI).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { sql } from 'kysely';
import { describeDatabaseUrl, MIGRATIONS, openPostgresStore, SqliteStore, type SqlStore } from './index.js';
import { postgresForTests } from './testsuite/index.js';

const cluster = await postgresForTests();
const skip = 'skip' in cluster ? cluster.skip : false;
const dir = mkdtempSync(join(tmpdir(), 'ramify-store-pg-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Table → its columns (name and NOT NULL), sorted; the bookkeeping table left out. `primaryKey` names a
 * table's key columns to count as NOT NULL (Postgres makes them so; SQLite does not, a quirk of its own).
 */
async function columnsOf(store: SqlStore, primaryKey: (table: string) => string[] = () => []): Promise<Record<string, string[]>> {
  const tables = await store.kysely.introspection.getTables();
  const out: Record<string, string[]> = {};
  for (const t of tables.filter((t) => t.name !== 'schema_migrations').sort((a, b) => a.name.localeCompare(b.name))) {
    const key = primaryKey(t.name);
    out[t.name] = t.columns.map((c) => `${c.name}${c.isNullable && !key.includes(c.name) ? '' : ' not null'}`).sort();
  }
  return out;
}

describe('Postgres store', { skip }, () => {
  if ('skip' in cluster) return;

  test('a fresh database gets the same tables and columns as a fresh SQLite file, and records every migration', async () => {
    const pgStore = await openPostgresStore({ url: await cluster.ensureDatabase('parity') });
    const sqliteStore = new SqliteStore({ path: join(dir, 'parity.db') });
    try {
      const sqliteKey = (table: string): string[] =>
        (sqliteStore.db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string; pk: number }>).filter((c) => c.pk > 0).map((c) => c.name);
      assert.deepEqual(await columnsOf(pgStore), await columnsOf(sqliteStore, sqliteKey));
      const recorded = await pgStore.kysely.selectFrom('schema_migrations').select(['version', 'name']).orderBy('version').execute();
      assert.deepEqual(recorded, MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
    } finally {
      await pgStore.close();
      await sqliteStore.close();
    }
  });

  test('several processes opening one database at once apply each migration once (advisory lock)', async () => {
    const url = await cluster.ensureDatabase('concurrent');
    const stores = await Promise.all(Array.from({ length: 4 }, () => openPostgresStore({ url, poolSize: 2 })));
    try {
      const counts = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM schema_migrations`.execute(stores[0]!.kysely);
      assert.equal(Number(counts.rows[0]?.n), MIGRATIONS.length);
      assert.deepEqual((await stores[3]!.listTeams()).map((t) => t.id), ['default'], 'the default team was inserted once');
    } finally {
      for (const s of stores) await s.close();
    }
  });

  test('a database that met a later migration first gets the earlier one too (numbers from parallel branches)', async () => {
    const url = await cluster.ensureDatabase('out_of_order');
    const early = await openPostgresStore({ url }, MIGRATIONS.filter((m) => m.version !== 19));
    await early.appendEvent({ type: 'sandbox.lifecycle.created', at: 1, teamId: 'default', sandboxId: null, keyId: null, cause: 'api', data: {} });
    await early.close();
    const store = await openPostgresStore({ url });
    try {
      const versions = (await store.kysely.selectFrom('schema_migrations').select('version').orderBy('version').execute()).map((r) => r.version);
      assert.deepEqual(versions, MIGRATIONS.map((m) => m.version));
      assert.equal((await store.listEvents({ teamId: 'default', order: 'asc', limit: 10 })).length, 1, "the later migration's rows stay");
      await store.recordUsage([]);
    } finally {
      await store.close();
    }
  });

  test("migration 28 numbers a team's existing events and deliveries per team, as on SQLite", async () => {
    const url = await cluster.ensureDatabase('event_team_seq');
    const early = await openPostgresStore({ url }, MIGRATIONS.filter((m) => m.version < 28));
    for (const [at, team] of [[1, 'default'], [2, 'acme'], [3, 'acme'], [4, 'default'], [5, 'acme']] as const) {
      await sql`INSERT INTO events (type, at, team_id, sandbox_id, key_id, cause, data) VALUES ('sandbox.lifecycle.created', ${at}, ${team}, NULL, NULL, 'api', '{}')`.execute(early.kysely);
    }
    await sql`INSERT INTO webhooks (id, team_id, name, url, events, secret, created_at) VALUES ('wh_1', 'default', 'w', 'http://127.0.0.1:9/', '[]', 's', 1)`.execute(early.kysely);
    await sql`INSERT INTO webhook_deliveries (id, webhook_id, event_seq, event_type, status, created_at) VALUES ('dlv_1', 'wh_1', 4, 'sandbox.lifecycle.created', 'pending', 1)`.execute(early.kysely);
    await early.close();
    const store = await openPostgresStore({ url });
    try {
      const numbers = async (teamId: string): Promise<number[][]> => (await store.listEvents({ teamId, order: 'asc', limit: 10 })).map((e) => [e.seq, e.teamSeq]);
      assert.deepEqual([await numbers('default'), await numbers('acme')], [[[1, 1], [4, 2]], [[2, 1], [3, 2], [5, 3]]]);
      assert.deepEqual((await store.listDeliveries('wh_1', 10)).map((d) => [d.eventSeq, d.eventTeamSeq]), [[4, 2]]);
      assert.equal((await store.appendEvent({ type: 'sandbox.oom', at: 6, teamId: 'acme', sandboxId: null, keyId: null, cause: 'runtime', data: {} })).teamSeq, 4);
    } finally {
      await store.close();
    }
  });

  test('migration 35 numbers existing audit entries per team (no team: a stream of its own), as on SQLite', async () => {
    const url = await cluster.ensureDatabase('audit_team_seq');
    const early = await openPostgresStore({ url }, MIGRATIONS.filter((m) => m.version < 35));
    for (const [at, team] of [[1, 'default'], [2, 'acme'], [3, null], [4, 'acme'], [5, 'default'], [6, null], [7, 'acme']] as const) {
      await sql`INSERT INTO audit_log (at, api_key_id, team_id, method, path, action, sandbox_id, status, error_code) VALUES (${at}, NULL, ${team}, 'POST', '/v1/sandboxes', 'sandbox.create', NULL, 201, NULL)`.execute(early.kysely);
    }
    await early.close();
    const store = await openPostgresStore({ url });
    try {
      const numbers = async (teamId: string | null): Promise<number[][]> => (await store.listAudit({ teamId, limit: 10 })).map((e) => [e.seq, e.teamSeq]);
      assert.deepEqual([await numbers('default'), await numbers('acme'), await numbers(null)], [[[5, 2], [1, 1]], [[7, 3], [4, 2], [2, 1]], [[6, 2], [3, 1]]]);
      const entry = { at: 8, apiKeyId: null, method: 'POST', path: '/v1/sandboxes', action: 'sandbox.create', sandboxId: null, status: 201, errorCode: null, tool: null };
      assert.equal((await store.appendAudit({ ...entry, teamId: 'acme' })).teamSeq, 4);
      assert.equal((await store.appendAudit({ ...entry, teamId: null })).teamSeq, 3);
    } finally {
      await store.close();
    }
  });

  test('a schema newer than this code is refused, naming both versions', async () => {
    const url = await cluster.ensureDatabase('newer');
    const store = await openPostgresStore({ url });
    await store.kysely.insertInto('schema_migrations').values({ version: 999, name: 'from-the-future', applied_at: 1 }).execute();
    await store.close();
    await assert.rejects(openPostgresStore({ url }), (err: { code?: string; message?: string }) => err.code === 'INTERNAL' && /999 is newer than this Ramify/.test(err.message ?? ''));
  });

  test('unreachable server, missing database, unknown user and a non-postgres URL: clear errors without the password', async () => {
    const closed = cluster.url('x').replace(/:(\d+)\//, ':1/').replace('postgres@', 'postgres:hunter2@');
    await assert.rejects(openPostgresStore({ url: closed, connectTimeoutMs: 2000 }), (err: { code?: string; message?: string }) => {
      assert.equal(err.code, 'DATABASE_UNAVAILABLE');
      assert.match(err.message ?? '', /cannot open the database at postgres:\/\/postgres@127\.0\.0\.1:1\/x: .*start Postgres/);
      assert.doesNotMatch(err.message ?? '', /hunter2/);
      return true;
    });
    await assert.rejects(openPostgresStore({ url: cluster.url('no_such_db') }), (err: { code?: string; message?: string }) =>
      err.code === 'DATABASE_UNAVAILABLE' && /does not exist: create it/.test(err.message ?? ''));
    await assert.rejects(openPostgresStore({ url: cluster.url('postgres').replace('postgres@', 'nobody:pw@') }), (err: { code?: string; message?: string }) =>
      err.code === 'DATABASE_UNAVAILABLE' && /user or password/.test(err.message ?? '') && !/pw@/.test(err.message ?? ''));
    await assert.rejects(openPostgresStore({ url: 'mysql://root:pw@127.0.0.1/x' }), { code: 'VALIDATION_FAILED' });
    assert.equal(describeDatabaseUrl('postgres://u:secret@db.internal:5432/ramify'), 'postgres://u@db.internal:5432/ramify');
  });
});
