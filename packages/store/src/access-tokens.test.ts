import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from './sqlite-store.js';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ramify-store-ingress-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

const record = (id: string) => ({
  id, teamId: 'default', state: 'running' as const, runtime: 'gvisor' as const, templateId: 'tpl_1', sourceSnapshotId: 'snap_tpl', rootfsDir: '/r', parentId: null,
  cpuCount: 1, memoryMB: 512, diskSizeMB: null, metadata: {}, envs: {}, createdAt: 1, timeoutMs: 300_000, onTimeout: 'pause' as const,
  endAt: null, slot: null, pausedSnapshotId: null, error: null, operation: null, ingress: { ports: [{ port: 3000, access: 'token' as const }], autoResume: null }, autoPause: null, lastActiveAt: null, hostId: null,
});

test('exposed ports and the access token survive a reopen; a second ensure keeps the first token', async () => {
  const path = join(dir, 'ingress.db');
  const store = new SqliteStore({ path });
  await store.insertSandbox(record('sbx_a'));
  assert.equal(await store.getAccessToken('sbx_a'), null);
  assert.equal(await store.ensureAccessToken('sbx_a', 'rit_first', 1), 'rit_first');
  assert.equal(await store.ensureAccessToken('sbx_a', 'rit_second', 2), 'rit_first', 'insert-or-keep');
  await store.updateSandbox('sbx_a', { ingress: { ports: [{ port: 80, access: 'public' }, { port: 3000, access: 'token' }], autoResume: false } });
  await store.close();
  const reopened = new SqliteStore({ path });
  assert.equal(await reopened.getAccessToken('sbx_a'), 'rit_first');
  assert.deepEqual((await reopened.getSandbox('sbx_a'))?.ingress, { ports: [{ port: 80, access: 'public' }, { port: 3000, access: 'token' }], autoResume: false });
  await assert.rejects(reopened.ensureAccessToken('sbx_missing', 'rit_x', 1), { code: 'SANDBOX_NOT_FOUND' });
  await reopened.close();
});
