/**
 * The egress log table on a real SQLite file, below the port (the conformance suite has the port's
 * behaviours): how many rows the trimming leaves, the cascade with the sandbox row, migration 4.
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

// The port's behaviours are the conformance suite's (store-conformance.test.ts); these look at the table itself.
describe('egress log rows (real SQLite)', () => {
  test('trimming as it goes: a busy sandbox holds at most N rows plus one trim interval', async () => {
    assert.equal(DEFAULT_EGRESS_LOG_MAX_ENTRIES, 1000);
    await withStore('bounded', { egressLogMaxEntries: 10 }, async (store) => {
      const busy = sandbox();
      await store.insertSandbox(busy);
      for (let i = 0; i < 25; i += 1) await store.appendEgressLog([entry(busy.id, i)]);
      assert.ok(rowCount(store, busy.id) <= 10 + 1, `rows kept: ${rowCount(store, busy.id)}`);
      await store.appendEgressLog(Array.from({ length: 40 }, (_, i) => entry(busy.id, 25 + i)));
      assert.ok(rowCount(store, busy.id) <= 10 + 1, `rows kept: ${rowCount(store, busy.id)}`);
    });
  });

  test('deleting the sandbox row deletes its log (foreign key cascade)', async () => {
    await withStore('cascade', {}, async (store) => {
      const other = sandbox();
      await store.insertSandbox(other);
      await store.appendEgressLog([entry(other.id, 1)]);
      assert.equal(rowCount(store, other.id), 1);
      store.db.prepare('DELETE FROM sandboxes WHERE id = ?').run(other.id);
      assert.equal(rowCount(store, other.id), 0);
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
