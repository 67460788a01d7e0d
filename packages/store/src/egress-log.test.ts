/**
 * The egress log table on a real SQLite file: append, newest-first reads with a limit, the per-sandbox
 * bound, skipping unknown/killed sandboxes, deletion on kill and with the sandbox, migration 4.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EgressLogRecord, SandboxRecord } from '@ramify/core';
import { appliedMigrations, DEFAULT_EGRESS_LOG_MAX_ENTRIES, MIGRATIONS, openDatabase, SqliteStore } from './index.js';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ramify-store-egress-log-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

let seq = 0;
function sandbox(overrides: Partial<SandboxRecord> = {}): SandboxRecord {
  seq += 1;
  return {
    id: `sbx_log_${seq}`, teamId: 'default', state: 'running', runtime: 'gvisor', templateId: 'tpl_1', sourceSnapshotId: 'snap_tpl', rootfsDir: '/r', parentId: null,
    cpuCount: 1, memoryMB: 512, diskSizeMB: null, metadata: {}, envs: {}, createdAt: 1_700_000_000_000 + seq, timeoutMs: 300_000, onTimeout: 'pause',
    endAt: null, slot: null, pausedSnapshotId: null, error: null, operation: null, ingress: { ports: [], autoResume: null }, autoPause: null, lastActiveAt: null, hostId: null, ...overrides,
  };
}

/** Entry `i` of `sandboxId`: a denied TCP connection to 192.0.2.1 on port 1000+i, at 1000+i ms. */
function entry(sandboxId: string, i: number, overrides: Partial<EgressLogRecord> = {}): EgressLogRecord {
  return { sandboxId, at: 1_000 + i, protocol: 'tcp', destination: '192.0.2.1', port: 1_000 + i, name: null, verdict: 'denied', rule: null, ...overrides };
}

async function withStore(name: string, options: { egressLogMaxEntries?: number }, fn: (store: SqliteStore) => Promise<void>): Promise<void> {
  const store = new SqliteStore({ path: join(dir, `${name}.db`), ...options });
  try {
    await fn(store);
  } finally {
    await store.close();
  }
}

const rowCount = (store: SqliteStore, sandboxId: string): number =>
  (store.db.prepare('SELECT COUNT(*) AS n FROM egress_log WHERE sandbox_id = ?').get(sandboxId) as { n: number }).n;

describe('egress log rows (real SQLite)', () => {
  test('append keeps every field; reads are newest first, limited; other sandboxes are separate', async () => {
    await withStore('basic', {}, async (store) => {
      const a = sandbox();
      const b = sandbox();
      await store.insertSandbox(a);
      await store.insertSandbox(b);
      const dns: EgressLogRecord = { sandboxId: a.id, at: 5, protocol: 'dns', destination: '', port: null, name: 'denied.test', verdict: 'denied', rule: null };
      const allowed: EgressLogRecord = { sandboxId: a.id, at: 6, protocol: 'tcp', destination: '198.51.100.7', port: 443, name: 'pkg.test', verdict: 'allowed', rule: '*.pkg.test:443' };
      const failed: EgressLogRecord = { sandboxId: a.id, at: 7, protocol: 'dns', destination: '', port: null, name: 'gone.pkg.test', verdict: 'allowed', rule: '*.pkg.test', error: 'NXDOMAIN' };
      assert.equal(await store.appendEgressLog([dns, entry(b.id, 1), allowed, failed]), 4);
      assert.equal(await store.appendEgressLog([]), 0);
      assert.deepEqual(await store.listEgressLog(a.id, 10), [failed, allowed, dns]);
      assert.deepEqual(await store.listEgressLog(a.id, 1), [failed]);
      assert.deepEqual(await store.listEgressLog(b.id, 10), [entry(b.id, 1)]);
      assert.deepEqual(await store.listEgressLog('sbx_missing', 10), []);
      // Order is append order, not `at` (sources' clocks may interleave).
      await store.appendEgressLog([entry(a.id, 0, { at: 1 })]);
      assert.equal((await store.listEgressLog(a.id, 1))[0]?.at, 1);
    });
  });

  test('entries of unknown and killed sandboxes are skipped, the rest of the batch is stored', async () => {
    await withStore('skip', {}, async (store) => {
      const live = sandbox();
      const dead = sandbox({ state: 'killed' });
      await store.insertSandbox(live);
      await store.insertSandbox(dead);
      const stored = await store.appendEgressLog([entry('sbx_missing', 1), entry(live.id, 2), entry(dead.id, 3), entry(live.id, 4)]);
      assert.equal(stored, 2);
      assert.deepEqual((await store.listEgressLog(live.id, 10)).map((e) => e.port), [1004, 1002]);
      assert.equal(rowCount(store, dead.id), 0);
    });
  });

  test('each sandbox keeps only its newest N entries, oldest dropped first; reads never exceed N', async () => {
    assert.equal(DEFAULT_EGRESS_LOG_MAX_ENTRIES, 1000);
    await withStore('bounded', { egressLogMaxEntries: 10 }, async (store) => {
      const busy = sandbox();
      const quiet = sandbox();
      await store.insertSandbox(busy);
      await store.insertSandbox(quiet);
      await store.appendEgressLog([entry(quiet.id, 0), entry(quiet.id, 1)]);
      for (let i = 0; i < 25; i += 1) await store.appendEgressLog([entry(busy.id, i)]);
      await store.appendEgressLog(Array.from({ length: 40 }, (_, i) => entry(busy.id, 25 + i)));
      const newest = await store.listEgressLog(busy.id, 1000);
      assert.deepEqual(newest.map((e) => e.port), Array.from({ length: 10 }, (_, i) => 1064 - i));
      // Trimmed as it goes: the table holds at most N plus one trim interval's slack.
      assert.ok(rowCount(store, busy.id) <= 10 + 1, `rows kept: ${rowCount(store, busy.id)}`);
      assert.deepEqual((await store.listEgressLog(quiet.id, 1000)).map((e) => e.port), [1001, 1000]);
    });
  });

  test('a kill deletes the log in the same write; deleting the sandbox row deletes it too', async () => {
    await withStore('kill', {}, async (store) => {
      const doomed = sandbox();
      const other = sandbox();
      await store.insertSandbox(doomed);
      await store.insertSandbox(other);
      await store.appendEgressLog([entry(doomed.id, 1), entry(other.id, 1)]);
      await store.updateSandbox(doomed.id, { state: 'killing' });
      assert.equal(rowCount(store, doomed.id), 1, 'still there while killing');
      await store.updateSandbox(doomed.id, { state: 'killed', slot: null });
      assert.equal(rowCount(store, doomed.id), 0);
      assert.equal(await store.appendEgressLog([entry(doomed.id, 2)]), 0, 'verdicts trailing a kill are not stored');
      assert.deepEqual(await store.listEgressLog(doomed.id, 10), []);
      assert.equal(rowCount(store, other.id), 1);
      await assert.rejects(store.updateSandbox('sbx_missing', { state: 'killed' }), { code: 'SANDBOX_NOT_FOUND' });

      store.db.prepare('DELETE FROM sandboxes WHERE id = ?').run(other.id);
      assert.equal(rowCount(store, other.id), 0);
    });
  });

  test('entries survive reopening the file', async () => {
    const sbx = sandbox();
    await withStore('reopen', {}, async (store) => {
      await store.insertSandbox(sbx);
      await store.appendEgressLog([entry(sbx.id, 1), entry(sbx.id, 2)]);
    });
    await withStore('reopen', {}, async (store) => {
      assert.deepEqual((await store.listEgressLog(sbx.id, 10)).map((e) => e.port), [1002, 1001]);
    });
  });
});

describe('migration 4: egress-log (real SQLite file)', () => {
  test('a version-3 database gains the egress log table; bad protocols and verdicts are refused', async () => {
    const path = join(dir, 'v3.db');
    const db = openDatabase(path, MIGRATIONS.filter((m) => m.version <= 3));
    assert.deepEqual(appliedMigrations(db), [1, 2, 3]);
    db.prepare(
      `INSERT INTO sandboxes (id, state, runtime, template_id, source_snapshot_id, parent_id, cpu_count, memory_mb, metadata, envs, created_at,
         timeout_ms, on_timeout, end_at, slot, paused_snapshot_id, error, operation, updated_at, rootfs_dir)
       VALUES ('sbx_old', 'running', 'gvisor', 'tpl_1', NULL, NULL, 1, 512, '{}', '{}', 1, 1000, 'pause', NULL, 3, NULL, NULL, NULL, 1, '/r')`,
    ).run();
    db.close();

    await withStore('v3', {}, async (store) => {
      assert.deepEqual(appliedMigrations(store.db), MIGRATIONS.map((m) => m.version));
      assert.ok(MIGRATIONS.some((m) => m.version === 4 && m.name === 'egress-log'));
      assert.deepEqual(await store.listEgressLog('sbx_old', 10), []);
      assert.equal(await store.appendEgressLog([entry('sbx_old', 1)]), 1);
      await assert.rejects(store.appendEgressLog([entry('sbx_old', 2, { protocol: 'sctp' as EgressLogRecord['protocol'] })]), /CHECK constraint/);
      await assert.rejects(store.appendEgressLog([entry('sbx_old', 3, { verdict: 'maybe' as EgressLogRecord['verdict'] })]), /CHECK constraint/);
      assert.equal(rowCount(store, 'sbx_old'), 1, 'a failed batch stores nothing');
    });
  });
});
