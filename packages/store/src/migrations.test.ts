/**
 * Upgrading a real SQLite file made at an earlier schema version.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appliedMigrations, MIGRATIONS, openDatabase, SqliteStore } from './index.js';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ramify-store-migrate-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** A database at schema version 1 (before rootfs pinning) holding a template, a paused sandbox and snapshots. */
function createVersion1Database(path: string): void {
  const db = openDatabase(path, MIGRATIONS.filter((m) => m.version <= 1));
  assert.deepEqual(appliedMigrations(db), [1]);
  db.prepare(
    `INSERT INTO templates (id, name, runtime, spec_hash, snapshot_id, parent, size_bytes, rootfs_dir, created_at)
     VALUES ('tpl_1', 'base', 'gvisor', 'h', 'snap_tpl', NULL, 1, '/layers/files-a/rootfs', 1)`,
  ).run();
  const snapshot = db.prepare(
    `INSERT INTO snapshots (id, name, kind, status, runtime, template_id, sandbox_id, parent_snapshot_id, size_bytes, created_at, cpu_count, memory_mb)
     VALUES (?, ?, ?, 'ready', 'gvisor', ?, NULL, NULL, 1, 1, 1, 512)`,
  );
  snapshot.run('snap_tpl', null, 'template', 'tpl_1');
  snapshot.run('snap_pause', null, 'pause', 'tpl_1');
  snapshot.run('snap_orphan', 'orphan', 'named', 'tpl_gone');
  const sandbox = db.prepare(
    `INSERT INTO sandboxes (id, state, runtime, template_id, source_snapshot_id, parent_id, cpu_count, memory_mb, metadata, envs, created_at,
       timeout_ms, on_timeout, end_at, slot, paused_snapshot_id, error, operation, updated_at)
     VALUES (?, 'paused', 'gvisor', ?, 'snap_tpl', NULL, 1, 512, '{}', '{}', 1, 1000, 'pause', NULL, NULL, ?, NULL, NULL, 1)`,
  );
  sandbox.run('sbx_1', 'tpl_1', 'snap_pause');
  sandbox.run('sbx_orphan', 'tpl_gone', null);
  db.close();
}

describe('migration 2: pin-rootfs-dir (real SQLite file)', () => {
  test('a version-1 database gains rootfs_dir on sandboxes and snapshots, backfilled from their template', async () => {
    const path = join(dir, 'v1.db');
    createVersion1Database(path);

    const store = new SqliteStore({ path });
    try {
      assert.deepEqual(appliedMigrations(store.db), MIGRATIONS.map((m) => m.version));
      assert.ok(MIGRATIONS.some((m) => m.version === 2 && m.name === 'pin-rootfs-dir'));
      assert.equal((await store.getSandbox('sbx_1'))?.rootfsDir, '/layers/files-a/rootfs');
      assert.equal((await store.getSnapshot('snap_pause'))?.rootfsDir, '/layers/files-a/rootfs');
      assert.equal((await store.getSnapshot('snap_tpl'))?.rootfsDir, '/layers/files-a/rootfs');
      // No template to take it from: empty, which restore refuses (never guessed).
      assert.equal((await store.getSandbox('sbx_orphan'))?.rootfsDir, '');
      assert.equal((await store.getSnapshot('snap_orphan'))?.rootfsDir, '');

      // A later rebuild re-points the template; the rows keep what they were backfilled with.
      const template = await store.getTemplate('tpl_1');
      assert.ok(template);
      await store.putTemplate({ ...template, rootfsDir: '/layers/files-b/rootfs' });
      assert.equal((await store.getSandbox('sbx_1'))?.rootfsDir, '/layers/files-a/rootfs');

      const columns = (table: string) =>
        (store.db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string; notnull: number }>).find((c) => c.name === 'rootfs_dir');
      assert.equal(columns('sandboxes')?.notnull, 1);
      assert.equal(columns('snapshots')?.notnull, 1);
    } finally {
      await store.close();
    }
  });

  test('new rows must name a rootfs: the store rejects an empty one, and the database an omitted one', async () => {
    const store = new SqliteStore({ path: join(dir, 'fresh.db') });
    try {
      await assert.rejects(
        store.insertSnapshot({
          id: 'snap_x', teamId: 'default', name: null, kind: 'pause', status: 'ready', runtime: 'gvisor', templateId: 't', sandboxId: null,
          parentSnapshotId: null, sizeBytes: 1, createdAt: 1, cpuCount: 1, memoryMB: 1, diskSizeMB: null, rootfsDir: '', envs: null, egress: null, hostId: null,
        }),
        { code: 'INTERNAL' },
      );
      assert.throws(
        () =>
          store.db
            .prepare(
              `INSERT INTO snapshots (id, team_id, name, kind, status, runtime, template_id, sandbox_id, parent_snapshot_id, size_bytes, created_at, cpu_count, memory_mb)
               VALUES ('snap_y', 'default', NULL, 'pause', 'ready', 'gvisor', 't', NULL, NULL, 1, 1, 1, 1)`,
            )
            .run(),
        /snapshots\.rootfs_dir is required/,
      );
      assert.throws(
        () =>
          store.db
            .prepare(
              `INSERT INTO sandboxes (id, state, runtime, template_id, cpu_count, memory_mb, metadata, envs, created_at, timeout_ms, on_timeout, updated_at)
               VALUES ('sbx_y', 'running', 'gvisor', 't', 1, 1, '{}', '{}', 1, 1, 'pause', 1)`,
            )
            .run(),
        /sandboxes\.rootfs_dir is required/,
      );
    } finally {
      await store.close();
    }
  });
});

describe('migration 3: egress-policies (real SQLite file)', () => {
  test('a version-2 database gains the egress policy table; existing sandboxes have no policy (open)', async () => {
    const path = join(dir, 'v2.db');
    const db = openDatabase(path, MIGRATIONS.filter((m) => m.version <= 2));
    assert.deepEqual(appliedMigrations(db), [1, 2]);
    db.prepare(
      `INSERT INTO sandboxes (id, state, runtime, template_id, source_snapshot_id, parent_id, cpu_count, memory_mb, metadata, envs, created_at,
         timeout_ms, on_timeout, end_at, slot, paused_snapshot_id, error, operation, updated_at, rootfs_dir)
       VALUES ('sbx_old', 'paused', 'gvisor', 'tpl_1', NULL, NULL, 1, 512, '{}', '{}', 1, 1000, 'pause', NULL, 3, 'snap_p', NULL, NULL, 1, '/r')`,
    ).run();
    db.close();

    const store = new SqliteStore({ path });
    try {
      assert.deepEqual(appliedMigrations(store.db), MIGRATIONS.map((m) => m.version));
      assert.ok(MIGRATIONS.some((m) => m.version === 3 && m.name === 'egress-policies'));
      assert.equal(await store.getEgressPolicy('sbx_old'), null);
      const allow = (...rules: string[]) => ({ mode: 'allowlist' as const, rules });
      assert.deepEqual(await store.putEgressPolicy('sbx_old', allow('pypi.org', '10.0.0.0/8:22'), 5), { sandboxId: 'sbx_old', mode: 'allowlist', rules: ['pypi.org', '10.0.0.0/8:22'], updatedAt: 5 });
      // Replacing is whole and keeps the order given.
      await store.putEgressPolicy('sbx_old', allow('b.example.com', 'a.example.com'), 6);
      assert.deepEqual(await store.getEgressPolicy('sbx_old'), { sandboxId: 'sbx_old', mode: 'allowlist', rules: ['b.example.com', 'a.example.com'], updatedAt: 6 });
      await store.putEgressPolicy('sbx_old', { mode: 'open', rules: [] }, 7);
      assert.deepEqual((await store.getEgressPolicy('sbx_old'))?.rules, []);
      await store.deleteEgressPolicy('sbx_old');
      assert.equal(await store.getEgressPolicy('sbx_old'), null);
      await store.deleteEgressPolicy('sbx_old');

      await assert.rejects(store.putEgressPolicy('sbx_missing', allow('pypi.org'), 1), { code: 'SANDBOX_NOT_FOUND' });
      assert.throws(() => store.db.prepare(`INSERT INTO egress_policies (sandbox_id, mode, rules, updated_at) VALUES ('sbx_old', 'open', '{"a":1}', 1)`).run(), /CHECK constraint/);
      // A policy goes with its sandbox.
      await store.putEgressPolicy('sbx_old', allow('pypi.org'), 8);
      store.db.prepare(`DELETE FROM sandboxes WHERE id = 'sbx_old'`).run();
      assert.equal(await store.getEgressPolicy('sbx_old'), null);
    } finally {
      await store.close();
    }
  });
});

describe('migration 6: disk-size (real SQLite file)', () => {
  test('existing sandboxes and snapshots have no recorded disk size (null); new rows keep theirs; sizes must be positive', async () => {
    const path = join(dir, 'v1-disk.db');
    createVersion1Database(path);
    const store = new SqliteStore({ path });
    try {
      assert.ok(MIGRATIONS.some((m) => m.version === 6 && m.name === 'disk-size'));
      assert.equal((await store.getSandbox('sbx_1'))?.diskSizeMB, null);
      assert.equal((await store.getSnapshot('snap_pause'))?.diskSizeMB, null);
      await store.updateSandbox('sbx_1', { diskSizeMB: 3072 });
      assert.equal((await store.getSandbox('sbx_1'))?.diskSizeMB, 3072);
      assert.throws(() => store.db.prepare(`UPDATE sandboxes SET disk_size_mb = 0 WHERE id = 'sbx_1'`).run(), /CHECK constraint/);
      assert.throws(() => store.db.prepare(`UPDATE snapshots SET disk_size_mb = -1 WHERE id = 'snap_pause'`).run(), /CHECK constraint/);
    } finally {
      await store.close();
    }
  });
});

describe('migration 7: template-envs (real SQLite file)', () => {
  test('templates built before it read envs {}; new rows keep theirs; the column holds only a JSON object', async () => {
    const path = join(dir, 'v6.db');
    const db = openDatabase(path, MIGRATIONS.filter((m) => m.version <= 6));
    assert.deepEqual(appliedMigrations(db), [1, 2, 3, 4, 5, 6]);
    assert.equal((db.prepare('PRAGMA table_info(templates)').all() as Array<{ name: string }>).some((c) => c.name === 'envs'), false);
    db.prepare(
      `INSERT INTO templates (id, name, runtime, spec_hash, snapshot_id, parent, size_bytes, rootfs_dir, created_at, images)
       VALUES ('tpl_old', 'old', 'gvisor', 'h', 'snap_old', NULL, 1, '/r', 1, '[{"runtime":"gvisor","snapshotId":"snap_old"}]')`,
    ).run();
    db.close();

    const store = new SqliteStore({ path });
    try {
      assert.deepEqual(appliedMigrations(store.db), MIGRATIONS.map((m) => m.version));
      assert.ok(MIGRATIONS.some((m) => m.version === 7 && m.name === 'template-envs'));
      const old = await store.getTemplate('tpl_old');
      assert.deepEqual(old?.envs, {});
      assert.deepEqual((await store.listTemplates()).map((t) => t.envs), [{}]);
      assert.ok(old);
      // A rebuild records the envs.
      await store.putTemplate({ ...old, envs: { DATA_DIR: '/srv/data' } });
      assert.deepEqual((await store.findTemplateByName('old', 'default'))?.envs, { DATA_DIR: '/srv/data' });
      assert.throws(() => store.db.prepare(`UPDATE templates SET envs = '["a"]' WHERE id = 'tpl_old'`).run(), /CHECK constraint/);
      assert.throws(() => store.db.prepare(`UPDATE templates SET envs = 'nope' WHERE id = 'tpl_old'`).run(), /CHECK constraint|malformed JSON/);
    } finally {
      await store.close();
    }
  });
});

describe('migration 8: snapshot-envs (real SQLite file)', () => {
  test('snapshots taken before it read envs null; new rows keep theirs or null; the column holds only a JSON object or NULL', async () => {
    const path = join(dir, 'v7.db');
    const db = openDatabase(path, MIGRATIONS.filter((m) => m.version <= 7));
    assert.deepEqual(appliedMigrations(db), [1, 2, 3, 4, 5, 6, 7]);
    assert.equal((db.prepare('PRAGMA table_info(snapshots)').all() as Array<{ name: string }>).some((c) => c.name === 'envs'), false);
    db.prepare(
      `INSERT INTO snapshots (id, name, kind, status, runtime, template_id, sandbox_id, parent_snapshot_id, size_bytes, created_at, cpu_count, memory_mb, rootfs_dir)
       VALUES ('snap_old', 'golden', 'named', 'ready', 'gvisor', 'tpl_1', 'sbx_1', NULL, 1, 1, 1, 512, '/r')`,
    ).run();
    db.close();

    const store = new SqliteStore({ path });
    try {
      assert.deepEqual(appliedMigrations(store.db), MIGRATIONS.map((m) => m.version));
      assert.ok(MIGRATIONS.some((m) => m.version === 8 && m.name === 'snapshot-envs'));
      const old = await store.getSnapshot('snap_old');
      assert.ok(old);
      assert.equal(old.envs, null);
      assert.equal((await store.findSnapshotByName('golden', 'default'))?.envs, null);
      assert.deepEqual((await store.listSnapshots()).map((s) => s.envs), [null]);

      // New rows: recorded envs round-trip; null stays null.
      await store.insertSnapshot({ ...old, id: 'snap_new', name: null, kind: 'pause', envs: { TOKEN: 's3cret', EMPTY: '' } });
      assert.deepEqual((await store.getSnapshot('snap_new'))?.envs, { TOKEN: 's3cret', EMPTY: '' });
      await store.insertSnapshot({ ...old, id: 'snap_tpl', name: null, kind: 'template', sandboxId: null, envs: null });
      assert.equal((await store.getSnapshot('snap_tpl'))?.envs, null);
      // An old row can be given envs later (a pause image named after the upgrade); other updates leave them alone.
      assert.deepEqual((await store.updateSnapshot('snap_old', { envs: { A: '1' } })).envs, { A: '1' });
      assert.deepEqual((await store.updateSnapshot('snap_old', { sizeBytes: 7 })).envs, { A: '1' });

      assert.throws(() => store.db.prepare(`UPDATE snapshots SET envs = '["a"]' WHERE id = 'snap_old'`).run(), /CHECK constraint/);
      assert.throws(() => store.db.prepare(`UPDATE snapshots SET envs = 'nope' WHERE id = 'snap_old'`).run(), /CHECK constraint|malformed JSON/);
    } finally {
      await store.close();
    }
  });
});

describe('migration 9: egress-modes (real SQLite file)', () => {
  test("existing policies keep their meaning ('[]' open, rules allowlist); deny-all is stored; the mode must fit the rules", async () => {
    const path = join(dir, 'v8.db');
    const db = openDatabase(path, MIGRATIONS.filter((m) => m.version <= 8));
    assert.deepEqual(appliedMigrations(db), [1, 2, 3, 4, 5, 6, 7, 8]);
    const sandbox = db.prepare(
      `INSERT INTO sandboxes (id, state, runtime, template_id, source_snapshot_id, parent_id, cpu_count, memory_mb, metadata, envs, created_at,
         timeout_ms, on_timeout, end_at, slot, paused_snapshot_id, error, operation, updated_at, rootfs_dir)
       VALUES (?, 'running', 'gvisor', 'tpl_1', NULL, NULL, 1, 512, '{}', '{}', 1, 1000, 'pause', NULL, NULL, NULL, NULL, NULL, 1, '/r')`,
    );
    for (const id of ['sbx_open', 'sbx_allow', 'sbx_none']) sandbox.run(id);
    db.prepare(`INSERT INTO egress_policies (sandbox_id, rules, updated_at) VALUES ('sbx_open', '[]', 2), ('sbx_allow', '["pypi.org","10.0.0.0/8:22"]', 3)`).run();
    db.close();

    const store = new SqliteStore({ path });
    try {
      assert.ok(MIGRATIONS.some((m) => m.version === 9 && m.name === 'egress-modes'));
      assert.deepEqual(await store.getEgressPolicy('sbx_open'), { sandboxId: 'sbx_open', mode: 'open', rules: [], updatedAt: 2 });
      assert.deepEqual(await store.getEgressPolicy('sbx_allow'), { sandboxId: 'sbx_allow', mode: 'allowlist', rules: ['pypi.org', '10.0.0.0/8:22'], updatedAt: 3 });
      assert.equal(await store.getEgressPolicy('sbx_none'), null);
      assert.deepEqual(await store.putEgressPolicy('sbx_none', { mode: 'deny-all', rules: [] }, 4), { sandboxId: 'sbx_none', mode: 'deny-all', rules: [], updatedAt: 4 });
      assert.deepEqual(await store.getEgressPolicy('sbx_none'), { sandboxId: 'sbx_none', mode: 'deny-all', rules: [], updatedAt: 4 });
      await store.putEgressPolicy('sbx_allow', { mode: 'deny-all', rules: [] }, 5);
      assert.equal((await store.getEgressPolicy('sbx_allow'))?.mode, 'deny-all');

      // The table still goes with its sandbox, and refuses a mode that does not fit its rules.
      assert.throws(() => store.db.prepare(`UPDATE egress_policies SET mode = 'allowlist' WHERE sandbox_id = 'sbx_open'`).run(), /CHECK constraint/);
      assert.throws(() => store.db.prepare(`UPDATE egress_policies SET rules = '["a.example.com"]' WHERE sandbox_id = 'sbx_none'`).run(), /CHECK constraint/);
      assert.throws(() => store.db.prepare(`UPDATE egress_policies SET mode = 'none' WHERE sandbox_id = 'sbx_open'`).run(), /CHECK constraint/);
      await assert.rejects(store.putEgressPolicy('sbx_missing', { mode: 'deny-all', rules: [] }, 1), { code: 'SANDBOX_NOT_FOUND' });
      store.db.prepare(`DELETE FROM sandboxes WHERE id = 'sbx_none'`).run();
      assert.equal(await store.getEgressPolicy('sbx_none'), null);
    } finally {
      await store.close();
    }
  });
});

describe('migration 10: snapshot-egress (real SQLite file)', () => {
  test('old snapshots get the policy their sandbox has (open when it never set one); template images and orphans none; new rows keep theirs', async () => {
    const path = join(dir, 'v9.db');
    const db = openDatabase(path, MIGRATIONS.filter((m) => m.version <= 9));
    assert.deepEqual(appliedMigrations(db), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const sandbox = db.prepare(
      `INSERT INTO sandboxes (id, state, runtime, template_id, source_snapshot_id, parent_id, cpu_count, memory_mb, metadata, envs, created_at,
         timeout_ms, on_timeout, end_at, slot, paused_snapshot_id, error, operation, updated_at, rootfs_dir)
       VALUES (?, ?, 'gvisor', 'tpl_1', NULL, NULL, 1, 512, '{}', '{}', 1, 1000, 'pause', NULL, NULL, NULL, NULL, NULL, 1, '/r')`,
    );
    sandbox.run('sbx_deny', 'killed');
    sandbox.run('sbx_allow', 'paused');
    sandbox.run('sbx_open', 'running');
    db.prepare(
      `INSERT INTO egress_policies (sandbox_id, mode, rules, updated_at) VALUES ('sbx_deny', 'deny-all', '[]', 2), ('sbx_allow', 'allowlist', '["pypi.org","10.0.0.0/8:22"]', 3)`,
    ).run();
    const snapshot = db.prepare(
      `INSERT INTO snapshots (id, name, kind, status, runtime, template_id, sandbox_id, parent_snapshot_id, size_bytes, created_at, cpu_count, memory_mb, rootfs_dir)
       VALUES (?, ?, ?, 'ready', 'gvisor', 'tpl_1', ?, NULL, 1, 1, 1, 512, '/r')`,
    );
    snapshot.run('snap_deny', 'sealed', 'named', 'sbx_deny');
    snapshot.run('snap_allow', null, 'pause', 'sbx_allow');
    snapshot.run('snap_open', null, 'fork', 'sbx_open');
    snapshot.run('snap_orphan', 'orphan', 'named', 'sbx_gone');
    snapshot.run('snap_tpl', null, 'template', null);
    db.close();

    const store = new SqliteStore({ path });
    try {
      assert.ok(MIGRATIONS.some((m) => m.version === 10 && m.name === 'snapshot-egress'));
      assert.deepEqual((await store.findSnapshotByName('sealed', 'default'))?.egress, { mode: 'deny-all', rules: [] }, 'a killed sandbox keeps its row and policy');
      assert.deepEqual((await store.getSnapshot('snap_allow'))?.egress, { mode: 'allowlist', rules: ['pypi.org', '10.0.0.0/8:22'] });
      assert.deepEqual((await store.getSnapshot('snap_open'))?.egress, { mode: 'open', rules: [] }, 'a sandbox without a policy row never set one: open');
      assert.equal((await store.getSnapshot('snap_orphan'))?.egress, null, 'nothing to go on');
      assert.equal((await store.getSnapshot('snap_tpl'))?.egress, null);

      // New rows: a recorded policy round-trips (only mode and rules are kept), null stays null; updates can set it.
      const old = await store.getSnapshot('snap_allow');
      assert.ok(old);
      const record = { sandboxId: 'sbx_x', mode: 'allowlist' as const, rules: ['a.example.com'], updatedAt: 9 };
      await store.insertSnapshot({ ...old, id: 'snap_new', egress: record });
      assert.deepEqual((await store.getSnapshot('snap_new'))?.egress, { mode: 'allowlist', rules: ['a.example.com'] });
      await store.insertSnapshot({ ...old, id: 'snap_new_tpl', kind: 'template', sandboxId: null, egress: null });
      assert.equal((await store.getSnapshot('snap_new_tpl'))?.egress, null);
      assert.deepEqual((await store.updateSnapshot('snap_orphan', { egress: { mode: 'deny-all', rules: [] } })).egress, { mode: 'deny-all', rules: [] });
      assert.deepEqual((await store.updateSnapshot('snap_orphan', { sizeBytes: 7 })).egress, { mode: 'deny-all', rules: [] }, 'other updates leave it alone');
      assert.deepEqual((await store.listSnapshots({ sandboxId: 'sbx_deny' })).map((s) => s.egress), [{ mode: 'deny-all', rules: [] }]);

      for (const bad of ['["a"]', 'nope', '{"mode":"none","rules":[]}', '{"mode":"deny-all","rules":["a.example.com"]}', '{"mode":"allowlist","rules":[]}', '{"mode":"open"}']) {
        assert.throws(() => store.db.prepare(`UPDATE snapshots SET egress = ? WHERE id = 'snap_open'`).run(bad), /CHECK constraint|malformed JSON/, bad);
      }
    } finally {
      await store.close();
    }
  });
});

describe('migration 17: teams (real SQLite file)', () => {
  test('everything of a version-16 database goes to the default team; keys become its admin keys; names become unique per team', async () => {
    const path = join(dir, 'v16.db');
    const db = openDatabase(path, MIGRATIONS.filter((m) => m.version <= 16));
    db.prepare(`INSERT INTO templates (id, name, runtime, spec_hash, snapshot_id, parent, size_bytes, rootfs_dir, created_at) VALUES ('tpl_1', 'base', 'gvisor', 'h', 'snap_tpl', NULL, 1, '/r', 1)`).run();
    db.prepare(
      `INSERT INTO snapshots (id, name, kind, status, runtime, template_id, sandbox_id, parent_snapshot_id, size_bytes, created_at, cpu_count, memory_mb, rootfs_dir, egress)
       VALUES ('snap_named', 'golden', 'named', 'ready', 'gvisor', 'tpl_1', NULL, NULL, 1, 1, 1, 512, '/r', '{"mode":"deny-all","rules":[]}')`,
    ).run();
    db.prepare(
      `INSERT INTO sandboxes (id, state, runtime, template_id, source_snapshot_id, parent_id, cpu_count, memory_mb, metadata, envs, created_at,
         timeout_ms, on_timeout, end_at, slot, paused_snapshot_id, error, operation, updated_at, rootfs_dir)
       VALUES ('sbx_1', 'running', 'gvisor', 'tpl_1', 'snap_tpl', NULL, 1, 512, '{}', '{}', 1, 1000, 'pause', NULL, NULL, NULL, NULL, NULL, 1, '/r')`,
    ).run();
    db.prepare(`INSERT INTO api_keys (id, name, hash, prefix, created_at, last_used_at, revoked_at) VALUES ('key_1', 'default', 'h1', 'rmf_abcd', 1, 5, NULL)`).run();
    db.prepare(`INSERT INTO ssh_keys (id, owner_api_key_id, name, type, fingerprint, public_key, created_at) VALUES ('sshk_1', 'key_1', 'me', 'ssh-ed25519', 'SHA256:x', 'ssh-ed25519 AAAA', 1)`).run();
    db.prepare(`INSERT INTO audit_log (at, api_key_id, method, path, action, sandbox_id, status, error_code) VALUES (1, 'key_1', 'POST', '/v1/sandboxes', 'sandbox.create', 'sbx_1', 201, NULL)`).run();
    db.close();

    const store = new SqliteStore({ path });
    try {
      assert.ok(MIGRATIONS.some((m) => m.version === 17 && m.name === 'teams'));
      assert.deepEqual((await store.listTeams()).map((t) => [t.id, t.quota]), [['default', { maxRunning: null, maxMemoryMB: null, maxForksPerCall: null }]]);
      assert.equal((await store.getSandbox('sbx_1'))?.teamId, 'default');
      assert.equal((await store.getTemplate('tpl_1'))?.teamId, 'default');
      const named = await store.findSnapshotByName('golden', 'default');
      assert.equal(named?.teamId, 'default');
      assert.deepEqual(named?.egress, { mode: 'deny-all', rules: [] }, 'the rebuilt table kept the row whole');
      const key = await store.findApiKeyByHash('h1');
      assert.deepEqual([key?.teamId, key?.role, key?.expiresAt, key?.lastUsedAt], ['default', 'admin', null, 5]);
      assert.equal((await store.findSshKeyByFingerprint('SHA256:x', 'default'))?.id, 'sshk_1');
      assert.deepEqual((await store.listAudit({ teamId: 'default' })).map((e) => e.action), ['sandbox.create']);

      // Per-team names: another team may use the same snapshot name, template name and SSH key; the same team may not.
      await store.insertTeam({ id: 'acme', createdAt: 2, quota: { maxRunning: null, maxMemoryMB: null, maxForksPerCall: null } });
      assert.ok(named);
      await store.insertSnapshot({ ...named, id: 'snap_acme', teamId: 'acme' });
      await assert.rejects(store.insertSnapshot({ ...named, id: 'snap_dup' }), { code: 'CONFLICT' });
      assert.equal((await store.findSnapshotByName('golden', 'acme'))?.id, 'snap_acme');
      const template = await store.getTemplate('tpl_1');
      assert.ok(template);
      await store.putTemplate({ ...template, id: 'tpl_acme', teamId: 'acme' });
      await assert.rejects(store.putTemplate({ ...template, id: 'tpl_dup' }), { code: 'CONFLICT' });
      assert.equal((await store.findTemplateByName('base', 'acme'))?.id, 'tpl_acme');
      await store.insertSshKey({ id: 'sshk_2', teamId: 'acme', ownerApiKeyId: null, name: 'me', type: 'ssh-ed25519', fingerprint: 'SHA256:x', publicKey: 'ssh-ed25519 AAAA', createdAt: 2 });
      // The rebuilt tables keep their checks: a snapshot row must name its rootfs, egress must be well-formed.
      assert.throws(() => store.db.prepare(`UPDATE snapshots SET egress = 'nope' WHERE id = 'snap_named'`).run(), /CHECK constraint|malformed JSON/);
      await assert.rejects(store.insertSnapshot({ ...named, id: 'snap_norootfs', name: null, rootfsDir: '' }), { code: 'INTERNAL' });
      assert.throws(() => store.db.prepare(`INSERT INTO teams (id, created_at) VALUES ('Bad Team', 1)`).run(), /CHECK constraint/);
      assert.throws(() => store.db.prepare(`UPDATE teams SET max_running = -1 WHERE id = 'acme'`).run(), /CHECK constraint/);
    } finally {
      await store.close();
    }
  });
});

describe('migrations numbered on branches developed side by side (real SQLite file)', () => {
  test('a database that met migration 20 before 19 (merged later) gets 19 too, and its data stays', async () => {
    const path = join(dir, 'v20-without-19.db');
    const early = openDatabase(path, MIGRATIONS.filter((m) => m.version !== 19));
    assert.equal(appliedMigrations(early).includes(19), false);
    early.prepare(`INSERT INTO events (type, at, team_id, sandbox_id, key_id, cause, data) VALUES ('sandbox.oom', 1, 'default', NULL, NULL, 'runtime', '{}')`).run();
    early.close();
    const store = new SqliteStore({ path });
    try {
      assert.deepEqual(appliedMigrations(store.db), MIGRATIONS.map((m) => m.version).sort((a, b) => a - b));
      assert.equal((store.db.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n, 1, 'the later migration\'s rows stay');
      assert.deepEqual(await store.getMeters(['sbx_none']), [], "migration 19's tables are there");
    } finally {
      await store.close();
    }
  });
});

describe('migration 26: host-ids (real SQLite file)', () => {
  test('sandboxes, snapshots and slot leases from before name no host until the daemon adopts them; slots become unique per host', async () => {
    const path = join(dir, 'v25.db');
    const early = openDatabase(path, MIGRATIONS.filter((m) => m.version < 26));
    early.prepare(
      `INSERT INTO sandboxes (id, state, runtime, template_id, source_snapshot_id, parent_id, cpu_count, memory_mb, metadata, envs, created_at,
         timeout_ms, on_timeout, end_at, slot, paused_snapshot_id, error, operation, updated_at, rootfs_dir)
       VALUES ('sbx_old', 'running', 'gvisor', 'tpl_1', 'snap_old', NULL, 1, 512, '{}', '{}', 1, 1000, 'pause', NULL, 3, NULL, NULL, NULL, 1, '/layers/r')`,
    ).run();
    early.prepare(
      `INSERT INTO snapshots (id, team_id, name, kind, status, runtime, template_id, sandbox_id, parent_snapshot_id, size_bytes, created_at, cpu_count, memory_mb, rootfs_dir)
       VALUES ('snap_old', 'default', NULL, 'template', 'ready', 'gvisor', 'tpl_1', NULL, NULL, 1, 1, 1, 512, '/layers/r')`,
    ).run();
    early.prepare(`INSERT INTO slots (slot, sandbox_id) VALUES (3, 'sbx_old')`).run();
    early.close();
    const store = new SqliteStore({ path });
    try {
      assert.ok(appliedMigrations(store.db).includes(26));
      assert.equal((await store.getSandbox('sbx_old'))?.hostId, null);
      assert.equal((await store.getSnapshot('snap_old'))?.hostId, null);
      assert.deepEqual(await store.listSlots('h1'), []);
      assert.deepEqual(await store.adoptUnhostedRows('h1'), { sandboxes: 1, snapshots: 1, slots: 1 });
      assert.equal((await store.getSandbox('sbx_old'))?.slot, 3);
      assert.deepEqual(await store.listSlots('h1'), [{ hostId: 'h1', slot: 3, sandboxId: 'sbx_old' }]);
      assert.equal(await store.allocateSlot('sbx_old', 'h1'), 3, 'the adopted lease is the one it holds');
      assert.throws(() => store.db.prepare(`INSERT INTO slots (host_id, slot, sandbox_id) VALUES ('h1', 3, 'sbx_other')`).run(), /UNIQUE constraint/);
    } finally {
      await store.close();
    }
  });
});

describe('migration 28: event-team-seq (real SQLite file)', () => {
  test("existing events are numbered per team in their order, deliveries keep their event's number, and new ones go on", async () => {
    const path = join(dir, 'v27.db');
    const early = openDatabase(path, MIGRATIONS.filter((m) => m.version < 28));
    const insert = early.prepare(`INSERT INTO events (type, at, team_id, sandbox_id, key_id, cause, data) VALUES ('sandbox.lifecycle.created', ?, ?, NULL, NULL, 'api', '{}')`);
    for (const [at, team] of [[1, 'default'], [2, 'acme'], [3, 'acme'], [4, 'default'], [5, 'acme']] as const) insert.run(at, team);
    early.prepare(`INSERT INTO webhooks (id, team_id, name, url, events, secret, created_at) VALUES ('wh_1', 'default', 'w', 'http://127.0.0.1:9/', '[]', 's', 1)`).run();
    early.prepare(`INSERT INTO webhook_deliveries (id, webhook_id, event_seq, event_type, status, created_at) VALUES ('dlv_1', 'wh_1', 4, 'sandbox.lifecycle.created', 'pending', 1)`).run();
    early.close();
    const store = new SqliteStore({ path });
    try {
      const numbers = async (teamId: string): Promise<number[][]> => (await store.listEvents({ teamId, order: 'asc', limit: 10 })).map((e) => [e.seq, e.teamSeq]);
      assert.deepEqual(await numbers('default'), [[1, 1], [4, 2]]);
      assert.deepEqual(await numbers('acme'), [[2, 1], [3, 2], [5, 3]]);
      assert.deepEqual([await store.lastEventTeamSeq('default'), await store.lastEventTeamSeq('acme')], [2, 3]);
      assert.deepEqual((await store.listDeliveries('wh_1', 10)).map((d) => [d.eventSeq, d.eventTeamSeq]), [[4, 2]]);
      const next = await store.appendEvent({ type: 'sandbox.oom', at: 6, teamId: 'acme', sandboxId: null, keyId: null, cause: 'runtime', data: {} });
      assert.deepEqual([next.seq, next.teamSeq], [6, 4]);
      assert.throws(() => store.db.prepare(`INSERT INTO events (type, at, team_id, team_seq, cause, data) VALUES ('sandbox.oom', 7, 'acme', 4, 'runtime', '{}')`).run(), /UNIQUE constraint/);
    } finally {
      await store.close();
    }
  });
});

describe('migration 35: audit-team-seq (real SQLite file)', () => {
  test('existing audit entries are numbered per team in their order (no team: a stream of its own), and new ones go on', async () => {
    const path = join(dir, 'v34.db');
    const early = openDatabase(path, MIGRATIONS.filter((m) => m.version < 35));
    const insert = early.prepare(`INSERT INTO audit_log (at, api_key_id, team_id, method, path, action, sandbox_id, status, error_code) VALUES (?, NULL, ?, 'POST', '/v1/sandboxes', 'sandbox.create', NULL, 201, NULL)`);
    for (const [at, team] of [[1, 'default'], [2, 'acme'], [3, null], [4, 'acme'], [5, 'default'], [6, null], [7, 'acme']] as const) insert.run(at, team);
    early.close();
    const store = new SqliteStore({ path });
    try {
      const numbers = async (teamId: string | null): Promise<number[][]> => (await store.listAudit({ teamId, limit: 10 })).map((e) => [e.seq, e.teamSeq]);
      assert.deepEqual(await numbers('default'), [[5, 2], [1, 1]]);
      assert.deepEqual(await numbers('acme'), [[7, 3], [4, 2], [2, 1]]);
      assert.deepEqual(await numbers(null), [[6, 2], [3, 1]]);
      const entry = { at: 8, apiKeyId: null, method: 'POST', path: '/v1/sandboxes', action: 'sandbox.create', sandboxId: null, status: 201, errorCode: null, tool: null };
      assert.deepEqual(await store.appendAudit({ ...entry, teamId: 'acme' }), { seq: 8, teamSeq: 4 });
      assert.deepEqual(await store.appendAudit({ ...entry, teamId: null }), { seq: 9, teamSeq: 3 });
      assert.deepEqual(await store.appendAudit({ ...entry, teamId: 'new-team' }), { seq: 10, teamSeq: 1 });
      assert.throws(() => store.db.prepare(`INSERT INTO audit_log (at, team_id, team_seq, method, path, action, status) VALUES (9, 'acme', 4, 'POST', '/', 'x', 201)`).run(), /UNIQUE constraint/);
    } finally {
      await store.close();
    }
  });
});
