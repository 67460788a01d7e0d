/**
 * Metering and budget rows (migration 19): hour amounts add up (the peak is a maximum), a counter write and
 * a time write set only their own meter columns, a new meter's time starts at the sandbox's creation, sums
 * per sandbox and per UTC day with team and sandbox filters, fork trees (subtree, roots) and the budgets
 * covering a sandbox (its own and its ancestors'), writes of unknown sandboxes skipped. Real SQLite.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BudgetRecord, SandboxRecord } from '@ramify/core';
import { SqliteStore } from './index.js';

let dir: string;
let store: SqliteStore;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ramify-store-usage-'));
  store = new SqliteStore({ path: join(dir, 'ramify.db') });
});
after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const HOUR = 3_600_000;
const T0 = 1_700_000_000_000 - (1_700_000_000_000 % HOUR);

function sandbox(id: string, overrides: Partial<SandboxRecord> = {}): SandboxRecord {
  return {
    id, teamId: 'default', state: 'running', runtime: 'gvisor', templateId: 'tpl_1', sourceSnapshotId: 'snap_tpl', rootfsDir: '/rootfs', parentId: null,
    cpuCount: 1, memoryMB: 512, diskSizeMB: null, metadata: {}, envs: {}, createdAt: T0 + 1_000, timeoutMs: 300_000, onTimeout: 'pause', endAt: null,
    slot: null, pausedSnapshotId: null, error: null, operation: null, ingress: { ports: [], autoResume: null }, autoPause: null, lastActiveAt: null, hostId: null, ...overrides,
  };
}

test('hour amounts add up, meters keep their own columns, a new meter starts at the creation', async () => {
  await store.insertSandbox(sandbox('sbx_a'));
  await store.recordUsage([{ sandboxId: 'sbx_a', hours: [{ hour: T0, cpuUs: 100, netInBytes: 5, memoryPeakBytes: 10 }], meter: { sampledAt: T0 + 5_000, instance: 'i1', cpuUs: 100, netInBytes: 5, netOutBytes: 0 } }]);
  assert.deepEqual(await store.getMeters(['sbx_a', 'sbx_none']), [{ sandboxId: 'sbx_a', timeAt: T0 + 1_000, sampledAt: T0 + 5_000, instance: 'i1', cpuUs: 100, netInBytes: 5, netOutBytes: 0 }]);
  await store.recordUsage([{ sandboxId: 'sbx_a', hours: [{ hour: T0, runningMs: 9_000, memoryMiBMs: 9_000 * 512 }], meter: { timeAt: T0 + 10_000 } }]);
  await store.recordUsage([
    { sandboxId: 'sbx_a', hours: [{ hour: T0, cpuUs: 50, memoryPeakBytes: 7 }, { hour: T0 + HOUR, cpuUs: 25 }], meter: { sampledAt: T0 + HOUR + 60_000, cpuUs: 175 } },
    { sandboxId: 'sbx_unknown', hours: [{ hour: T0, cpuUs: 1 }], meter: { timeAt: T0 } },
  ]);
  const [meter] = await store.getMeters(['sbx_a']);
  assert.equal(meter?.timeAt, T0 + 10_000, 'a counter write leaves the time alone');
  assert.equal(meter?.instance, 'i1', 'and the columns it does not name');
  assert.equal(meter?.cpuUs, 175);
  const [all] = await store.sumUsage({ fromHour: 0, toHour: T0 + 10 * HOUR, byDay: false });
  assert.deepEqual(all, {
    sandboxId: 'sbx_a', templateId: 'tpl_1', teamId: 'default', day: null,
    runningMs: 9_000, pausedMs: 0, cpuUs: 175, memoryMiBMs: 9_000 * 512, diskByteMs: 0, netInBytes: 5, netOutBytes: 0, memoryPeakBytes: 10,
  });
  assert.equal((await store.sumUsage({ fromHour: T0 + HOUR, toHour: T0 + 2 * HOUR, byDay: false }))[0]?.cpuUs, 25, 'only the hours asked');
  assert.deepEqual(await store.sumUsage({ teamId: 'other', fromHour: 0, toHour: T0 + 10 * HOUR, byDay: false }), []);
  const days = await store.sumUsage({ sandboxIds: ['sbx_a'], fromHour: 0, toHour: T0 + 10 * HOUR, byDay: true });
  assert.deepEqual(days.map((d) => d.day), [...new Set([T0, T0 + HOUR].map((h) => new Date(h).toISOString().slice(0, 10)))]);
  assert.deepEqual(await store.getMeters(['sbx_unknown']), [], 'writes of unknown sandboxes are skipped');
});

test('fork trees and the budgets covering a sandbox', async () => {
  await store.insertSandbox(sandbox('sbx_r'));
  await store.insertSandbox(sandbox('sbx_c1', { parentId: 'sbx_r' }));
  await store.insertSandbox(sandbox('sbx_c2', { parentId: 'sbx_r' }));
  await store.insertSandbox(sandbox('sbx_g', { parentId: 'sbx_c1', state: 'killed' }));
  assert.deepEqual((await store.subtree('sbx_r')).map((s) => s.id), ['sbx_r', 'sbx_c1', 'sbx_c2', 'sbx_g']);
  assert.deepEqual((await store.subtree('sbx_c1')).map((s) => s.id), ['sbx_c1', 'sbx_g']);
  assert.deepEqual([...(await store.treeRoots(['sbx_g', 'sbx_c2', 'sbx_r']))].sort(), [['sbx_c2', 'sbx_r'], ['sbx_g', 'sbx_r'], ['sbx_r', 'sbx_r']]);
  const budget = (sandboxId: string, cpuSeconds: number): BudgetRecord => ({
    sandboxId, teamId: 'default', cpuSeconds, sandboxSeconds: null, maxSandboxes: null, since: T0, baseCpuUs: 0, baseRunningMs: 0, exceeded: null, updatedAt: T0,
  });
  await store.putBudget(budget('sbx_r', 5));
  await store.putBudget(budget('sbx_c1', 2));
  assert.deepEqual((await store.budgetsCovering(['sbx_g'])).map((b) => [b.sandboxId, b.cpuSeconds]), [['sbx_c1', 2], ['sbx_r', 5]], 'nearest first');
  assert.deepEqual((await store.budgetsCovering(['sbx_c2'])).map((b) => b.sandboxId), ['sbx_r']);
  await store.putBudget({ ...budget('sbx_r', 9), exceeded: 'cpuSeconds' });
  assert.equal((await store.getBudget('sbx_r'))?.exceeded, 'cpuSeconds');
  await assert.rejects(store.putBudget(budget('sbx_nope', 1)), { code: 'SANDBOX_NOT_FOUND' });
  await store.deleteBudget('sbx_c1');
  assert.equal(await store.getBudget('sbx_c1'), null);
});
