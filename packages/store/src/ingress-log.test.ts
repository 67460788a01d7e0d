/**
 * The ingress log table and wake counts on a real SQLite file (migration 12): newest-first reads, the
 * per-sandbox bound, unknown and killed sandboxes skipped, rows gone at the kill; `autoPause` persisted
 * (on, changed, off) across a reopen.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IngressLogRecord, SandboxRecord } from '@ramify/core';
import { SqliteStore } from './index.js';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ramify-store-ingress-log-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

const sandbox = (id: string): SandboxRecord => ({
  id, teamId: 'default', state: 'running', runtime: 'gvisor', templateId: 'tpl_1', sourceSnapshotId: 'snap_tpl', rootfsDir: '/r', parentId: null,
  cpuCount: 1, memoryMB: 512, diskSizeMB: null, metadata: {}, envs: {}, createdAt: 1, timeoutMs: 300_000, onTimeout: 'pause',
  endAt: null, slot: null, pausedSnapshotId: null, error: null, operation: null, ingress: { ports: [], autoResume: null }, autoPause: null, lastActiveAt: null, hostId: null,
});
const entry = (sandboxId: string, i: number): IngressLogRecord => ({
  sandboxId, at: 1_000 + i, client: '127.0.0.1', method: 'GET', path: `/r${i}`, port: 8000, status: 200, bytes: i, durationMs: 0.5, woke: i === 0,
});

test('ingress log: newest first, bounded per sandbox, skipped for unknown and killed sandboxes, gone at the kill', async () => {
  const store = new SqliteStore({ path: join(dir, 'log.db'), ingressLogMaxEntries: 5 });
  await store.insertSandbox(sandbox('sbx_a'));
  await store.insertSandbox(sandbox('sbx_b'));
  assert.equal(await store.appendIngressLog([...Array.from({ length: 12 }, (_, i) => entry('sbx_a', i)), entry('sbx_b', 0), entry('sbx_nope', 0)]), 13);
  const a = await store.listIngressLog('sbx_a', 100);
  assert.deepEqual(a.map((e) => e.path), ['/r11', '/r10', '/r9', '/r8', '/r7'], 'the newest 5, newest first');
  assert.deepEqual((await store.listIngressLog('sbx_b', 10))[0], entry('sbx_b', 0), 'every field round-trips (woke as a boolean)');
  assert.deepEqual(await store.getIngressWakes('sbx_a'), { count: 0, lastAt: null });
  await store.recordIngressWake('sbx_a', 5_000);
  await store.recordIngressWake('sbx_a', 6_000);
  await store.recordIngressWake('sbx_nope', 6_000);
  assert.deepEqual(await store.getIngressWakes('sbx_a'), { count: 2, lastAt: 6_000 });
  await store.updateSandbox('sbx_a', { state: 'killed' });
  assert.deepEqual(await store.listIngressLog('sbx_a', 100), []);
  assert.equal(await store.appendIngressLog([entry('sbx_a', 99)]), 0, 'a killed sandbox logs nothing more');
  await store.close();
});

test('autoPause is stored, changed, turned off, and survives a reopen', async () => {
  const path = join(dir, 'auto-pause.db');
  const store = new SqliteStore({ path });
  await store.insertSandbox({ ...sandbox('sbx_p'), autoPause: { idleMs: 600_000 } });
  assert.deepEqual((await store.getSandbox('sbx_p'))?.autoPause, { idleMs: 600_000 });
  await store.updateSandbox('sbx_p', { autoPause: { idleMs: 60_000 } });
  await store.close();
  const reopened = new SqliteStore({ path });
  assert.deepEqual((await reopened.getSandbox('sbx_p'))?.autoPause, { idleMs: 60_000 });
  await reopened.updateSandbox('sbx_p', { autoPause: null });
  assert.equal((await reopened.getSandbox('sbx_p'))?.autoPause, null);
  await reopened.close();
});
