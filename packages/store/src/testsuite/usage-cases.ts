/**
 * Conformance cases: metering (hour amounts, meters, sums by sandbox and UTC day) and budgets over fork trees.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BudgetRecord } from '@ramify/core';
import { sandbox, withStore, type StoreHarness } from './harness.js';

const HOUR = 3_600_000;
const T0 = 1_700_000_000_000 - (1_700_000_000_000 % HOUR);

export function usageCases(h: StoreHarness): void {
  test('usage: hour amounts add up (peak maxed), meters keep their own columns, a new meter starts at the creation', async () => {
    await withStore(h, 'usage', async (store) => {
      await store.insertSandbox(sandbox({ id: 'sbx_a', createdAt: T0 + 1_000 }));
      await store.recordUsage([{ sandboxId: 'sbx_a', hours: [{ hour: T0, cpuUs: 100, netInBytes: 5, memoryPeakBytes: 10 }], meter: { sampledAt: T0 + 5_000, instance: 'i1', cpuUs: 100, netInBytes: 5, netOutBytes: 0 } }]);
      assert.deepEqual(await store.getMeters(['sbx_a', 'sbx_none']), [{ sandboxId: 'sbx_a', timeAt: T0 + 1_000, sampledAt: T0 + 5_000, instance: 'i1', cpuUs: 100, netInBytes: 5, netOutBytes: 0 }]);
      await store.recordUsage([{ sandboxId: 'sbx_a', hours: [{ hour: T0, runningMs: 9_000, memoryMiBMs: 9_000 * 512 + 0.5 }], meter: { timeAt: T0 + 10_000 } }]);
      await store.recordUsage([
        { sandboxId: 'sbx_a', hours: [{ hour: T0, cpuUs: 50, memoryPeakBytes: 7 }, { hour: T0 + 30 * HOUR, cpuUs: 25 }], meter: { sampledAt: T0 + HOUR + 60_000, cpuUs: 175 } },
        { sandboxId: 'sbx_unknown', hours: [{ hour: T0, cpuUs: 1 }], meter: { timeAt: T0 } },
      ]);
      const [meter] = await store.getMeters(['sbx_a']);
      assert.equal(meter?.timeAt, T0 + 10_000, 'a counter write leaves the time alone');
      assert.equal(meter?.instance, 'i1', 'and the columns it does not name');
      assert.equal(meter?.cpuUs, 175);
      const [all] = await store.sumUsage({ fromHour: 0, toHour: T0 + 100 * HOUR, byDay: false });
      assert.deepEqual(all, {
        sandboxId: 'sbx_a', templateId: 'tpl_1', teamId: 'default', day: null,
        runningMs: 9_000, pausedMs: 0, cpuUs: 175, memoryMiBMs: 9_000 * 512 + 0.5, diskByteMs: 0, netInBytes: 5, netOutBytes: 0, memoryPeakBytes: 10,
      });
      assert.equal((await store.sumUsage({ fromHour: T0 + HOUR, toHour: T0 + 100 * HOUR, byDay: false }))[0]?.cpuUs, 25, 'only the hours asked');
      assert.deepEqual(await store.sumUsage({ teamId: 'other', fromHour: 0, toHour: T0 + 100 * HOUR, byDay: false }), []);
      assert.deepEqual(await store.sumUsage({ sandboxIds: [], fromHour: 0, toHour: T0 + 100 * HOUR, byDay: false }), []);
      const days = await store.sumUsage({ sandboxIds: ['sbx_a'], fromHour: 0, toHour: T0 + 100 * HOUR, byDay: true });
      assert.deepEqual(days.map((d) => [d.day, d.cpuUs]), [[new Date(T0).toISOString().slice(0, 10), 150], [new Date(T0 + 30 * HOUR).toISOString().slice(0, 10), 25]]);
      assert.deepEqual(await store.getMeters(['sbx_unknown']), [], 'writes of unknown sandboxes are skipped');
    });
  });

  test('budgets: put replaces, covering walks ancestors nearest first, an unknown sandbox refused', async () => {
    await withStore(h, 'budgets', async (store) => {
      await store.insertSandbox(sandbox({ id: 'sbx_r' }));
      await store.insertSandbox(sandbox({ id: 'sbx_c1', parentId: 'sbx_r' }));
      await store.insertSandbox(sandbox({ id: 'sbx_c2', parentId: 'sbx_r' }));
      await store.insertSandbox(sandbox({ id: 'sbx_g', parentId: 'sbx_c1', state: 'killed' }));
      const budget = (sandboxId: string, cpuSeconds: number): BudgetRecord => ({
        sandboxId, teamId: 'default', cpuSeconds, sandboxSeconds: null, maxSandboxes: null, since: T0, baseCpuUs: 0, baseRunningMs: 0, exceeded: null, updatedAt: T0,
      });
      await store.putBudget(budget('sbx_r', 5));
      await store.putBudget({ ...budget('sbx_c1', 2.5), sandboxSeconds: 60, maxSandboxes: 3 });
      assert.deepEqual(await store.getBudget('sbx_c1'), { ...budget('sbx_c1', 2.5), sandboxSeconds: 60, maxSandboxes: 3 });
      assert.deepEqual((await store.budgetsCovering(['sbx_g'])).map((b) => [b.sandboxId, b.cpuSeconds]), [['sbx_c1', 2.5], ['sbx_r', 5]], 'nearest first');
      assert.deepEqual((await store.budgetsCovering(['sbx_c2', 'sbx_g'])).map((b) => b.sandboxId), ['sbx_c1', 'sbx_r'], 'each once');
      assert.deepEqual(await store.budgetsCovering([]), []);
      await store.putBudget({ ...budget('sbx_r', 9), exceeded: 'cpuSeconds' });
      assert.equal((await store.getBudget('sbx_r'))?.exceeded, 'cpuSeconds');
      await assert.rejects(store.putBudget(budget('sbx_nope', 1)), { code: 'SANDBOX_NOT_FOUND' });
      await store.deleteBudget('sbx_c1');
      assert.equal(await store.getBudget('sbx_c1'), null);
    });
  });
}
