import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxRecord } from '@ramify/core';
import { appliedMigrations, MIGRATIONS, SqliteStore } from './index.js';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ramify-store-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

let seq = 0;
function sandbox(overrides: Partial<SandboxRecord> = {}): SandboxRecord {
  seq += 1;
  return {
    id: `sbx_${String(seq).padStart(26, '0')}`,
    teamId: 'default',
    state: 'running',
    runtime: 'gvisor',
    templateId: 'tpl_1',
    sourceSnapshotId: 'snap_tpl',
    rootfsDir: '/layers/files-1/rootfs',
    parentId: null,
    cpuCount: 1,
    memoryMB: 512,
    diskSizeMB: null,
    metadata: {},
    envs: { A: '1' },
    createdAt: 1_700_000_000_000 + seq,
    timeoutMs: 300_000,
    onTimeout: 'pause',
    endAt: 1_700_000_300_000,
    slot: null,
    pausedSnapshotId: null,
    error: null,
    operation: null,
    ingress: { ports: [], autoResume: null },
    autoPause: null,
    lastActiveAt: null,
    hostId: null,
    ...overrides,
  };
}

// The port's behaviours are the conformance suite's (store-conformance.test.ts); these are SQLite's own.
describe('SqliteStore (real SQLite file)', () => {
  test('the file is private, migrated, in WAL mode with foreign keys on, and keeps rows across reopen', async () => {
    const path = join(dir, 'reopen.db');
    const store = new SqliteStore({ path });
    const record = sandbox({ metadata: { team: 'a' }, operation: { kind: 'fork', snapshotId: 'snap_x', childIds: ['sbx_a', 'sbx_b'], parentWasRunning: true } });
    await store.insertSandbox(record);
    await store.updateSandbox(record.id, { state: 'pausing', endAt: null });
    await store.close();
    assert.equal(statSync(path).mode & 0o777, 0o600);

    const reopened = new SqliteStore({ path });
    const loaded = await reopened.getSandbox(record.id);
    assert.deepEqual(loaded, { ...record, state: 'pausing', endAt: null });
    assert.deepEqual(appliedMigrations(reopened.db), MIGRATIONS.map((m) => m.version));
    assert.equal(reopened.db.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal(reopened.db.pragma('foreign_keys', { simple: true }), 1);
    await reopened.close();
  });
});

test('quota room reserved by a process that ended is free when the file is opened again', async () => {
  const path = join(dir, 'reservations.db');
  const first = new SqliteStore({ path });
  await first.setTeamQuota('default', { maxRunning: 1, maxMemoryMB: null, maxForksPerCall: null });
  const admit = (store: SqliteStore, id: string) => store.reserveTeamRoom({
    teamId: 'default', demand: [{ id, memoryMB: 1 }], holdingStates: ['running'], holder: 'host-a', leaseMs: 60_000, admits: (q, u) => u.running + 1 <= (q.maxRunning ?? Infinity),
  });
  assert.equal((await admit(first, 'sbx_one'))?.admitted, true);
  assert.equal((await admit(first, 'sbx_two'))?.admitted, false);
  await first.close(); // As a crash would: never released.
  const second = new SqliteStore({ path });
  try {
    assert.deepEqual(await second.teamUsage('default', ['running']), { running: 0, memoryMB: 0 });
    assert.equal((await admit(second, 'sbx_two'))?.admitted, true);
  } finally {
    await second.close();
  }
});
