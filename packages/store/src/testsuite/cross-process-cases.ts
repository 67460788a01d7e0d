/**
 * Conformance cases: what several processes over one store rely on (docs/design/SCALE-OUT.md). Each case
 * opens the same database twice, as two processes do, where the store declares it can be shared
 * (`eventNotifications`: Postgres); a store one process owns (SQLite) plays both parts with one connection:
 * quota admission, and a fork's admission into its tree's maxSandboxes, into room for one from both at
 * once admit one; reservations count until released or expired; one delivery per (webhook, event) and claims that one claimer gets, taken over when they run
 * out; the team counters as event positions; audit entries numbered per team without gaps or repeats;
 * append notifications heard by the other store (Postgres; SQLite declares none).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TeamQuota } from '@ramify/contracts';
import type { DeliveryRecord, Store, TeamUsage } from '@ramify/core';
import { freshId, sandbox, team, type StoreHarness } from './harness.js';

const HOLDING = ['creating', 'running', 'pausing', 'resuming'] as const;

/** Two stores on database `name` (one, twice, where only one process may open it); `fn` runs with both, both closed after. */
async function twoStores(h: StoreHarness, name: string, fn: (a: Store, b: Store) => Promise<void>): Promise<void> {
  const a = await h.open(name);
  if (a.eventNotifications === null) {
    try {
      return await fn(a, a);
    } finally {
      await a.close();
    }
  }
  const b = await h.open(name).catch(async (err: unknown) => {
    await a.close();
    throw err;
  });
  try {
    await fn(a, b);
  } finally {
    await b.close();
    await a.close();
  }
}

const fitsRunning = (n: number) => (quota: TeamQuota, usage: TeamUsage): boolean => quota.maxRunning === null || usage.running + n <= quota.maxRunning;

const admit = (store: Store, teamId: string, id: string, leaseMs = 60_000) =>
  store.reserveTeamRoom({ teamId, demand: [{ id, memoryMB: 256 }], holdingStates: HOLDING, holder: 'host-x', leaseMs, admits: fitsRunning(1) });

export function crossProcessCases(h: StoreHarness): void {
  test("audit ids: concurrent appends from two stores number each team's entries 1..n, once each, committed in number order", async () => {
    await twoStores(h, 'xp_audit', async (a, b) => {
      const entry = (teamId: string) => ({ at: 1, apiKeyId: null, teamId, method: 'POST', path: '/v1/sandboxes', action: 'sandbox.create', sandboxId: null, status: 201, errorCode: null, tool: null });
      const appends = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).appendAudit(entry(i % 4 < 2 ? 'xa' : 'xb')));
      const numbers = await Promise.all(appends);
      for (const teamId of ['xa', 'xb']) {
        const listed = await a.listAudit({ teamId, limit: 1000 });
        assert.deepEqual(listed.map((e) => e.teamSeq), Array.from({ length: 20 }, (_, i) => 20 - i), `${teamId}: 1..20, each once`);
        const seqs = listed.map((e) => e.seq);
        assert.deepEqual(seqs, [...seqs].sort((x, y) => y - x), `${teamId}: the global order follows the team's numbers`);
      }
      assert.equal(new Set(numbers.map((n) => n.seq)).size, 40);
    });
  });

  test('quota: concurrent admissions from two stores into room for one admit one; reservations count until released or expired', async () => {
    await twoStores(h, 'xp_quota', async (a, b) => {
      await a.insertTeam(team('qt'));
      await a.setTeamQuota('qt', { maxRunning: 2, maxMemoryMB: null, maxForksPerCall: null });
      await a.insertSandbox(sandbox({ teamId: 'qt', state: 'running', memoryMB: 100 }));
      // Both pools' connections open first, so the admissions below really run at once.
      await Promise.all([a, b].flatMap((s) => Array.from({ length: 6 }, () => s.teamUsage('qt', HOLDING))));
      const racing = Array.from({ length: 10 }, () => freshId('sbx'));
      const results = await Promise.all(racing.map((id, i) => admit(i % 2 === 0 ? a : b, 'qt', id)));
      const won = racing.filter((_, i) => results[i]?.admitted);
      assert.equal(won.length, 1, `room for one: ${JSON.stringify(results.map((r) => r?.usage))}`);
      await a.setTeamQuota('qt', { maxRunning: 3, maxMemoryMB: null, maxForksPerCall: null });
      const second = freshId('sbx');
      assert.equal((await admit(b, 'qt', second))?.admitted, true);
      const admitted = [won[0] as string, second];
      assert.deepEqual(await b.teamUsage('qt', HOLDING), { running: 3, memoryMB: 100 + 2 * 256 });
      // The admitted call's row appears (creating) while its reservation still stands: counted once.
      await a.insertSandbox(sandbox({ id: admitted[0], teamId: 'qt', state: 'creating', memoryMB: 256 }));
      assert.deepEqual(await a.teamUsage('qt', HOLDING), { running: 3, memoryMB: 100 + 2 * 256 });
      const refused = await admit(b, 'qt', freshId('sbx'));
      assert.deepEqual(refused, { admitted: false, quota: { maxRunning: 3, maxMemoryMB: null, maxForksPerCall: null }, usage: { running: 3, memoryMB: 612 } });
      // A call admitted again for its own sandbox (a resume) is not counted against itself.
      assert.equal((await admit(a, 'qt', admitted[1] as string))?.admitted, true);
      await b.releaseTeamRoom('qt', [admitted[1] as string]);
      assert.deepEqual(await a.teamUsage('qt', HOLDING), { running: 2, memoryMB: 356 });
      // A reservation whose lease ran out (its process died) no longer counts.
      const dying = freshId('sbx');
      assert.equal((await admit(a, 'qt', dying, 150))?.admitted, true);
      assert.equal((await a.teamUsage('qt', HOLDING)).running, 3);
      await b.renewTeamRoom('qt', [dying], 150);
      await new Promise((r) => setTimeout(r, 250));
      assert.equal((await b.teamUsage('qt', HOLDING)).running, 2);
      assert.equal(await admit(a, 'nobody', freshId('sbx')), null, 'an unknown team');
    });
  });

  test('fork trees: concurrent fork admissions from two stores into the last room of a maxSandboxes admit one', async () => {
    await twoStores(h, 'xp_tree', async (a, b) => {
      const root = sandbox({ state: 'running' });
      await a.insertSandbox(root);
      await a.insertSandbox(sandbox({ parentId: root.id, state: 'paused' }));
      await a.insertSandbox(sandbox({ parentId: root.id, state: 'killed' }));
      await a.putBudget({ sandboxId: root.id, teamId: 'default', cpuSeconds: null, sandboxSeconds: null, maxSandboxes: 3, since: 1, baseCpuUs: 0, baseRunningMs: 0, exceeded: null, updatedAt: 1 });
      const reserve = (store: Store, childIds: string[]) => store.reserveTreeRoom({
        budgetSandboxIds: [root.id], childIds, deadStates: ['killed', 'error'], holder: 'host-x', leaseMs: 60_000, admits: (_, alive) => alive + childIds.length <= 3,
      });
      await Promise.all([a, b].flatMap((s) => Array.from({ length: 6 }, () => s.getBudget(root.id))));
      const racing = Array.from({ length: 10 }, () => freshId('sbx'));
      const results = await Promise.all(racing.map((id, i) => reserve(i % 2 === 0 ? a : b, [id])));
      const won = racing.filter((_, i) => results[i]?.refused === null);
      assert.equal(won.length, 1, `two alive (the killed one does not count), room for one: ${JSON.stringify(results)}`);
      assert.deepEqual((await reserve(b, [freshId('sbx')])).refused, { budgetSandboxId: root.id, alive: 3 });
      // The child's row appears while its reservation stands: counted once; a fork of two is refused.
      await a.insertSandbox(sandbox({ id: won[0], parentId: root.id, state: 'creating' }));
      assert.deepEqual((await reserve(a, [freshId('sbx')])).refused, { budgetSandboxId: root.id, alive: 3 });
      await b.releaseTreeRoom(won);
      await a.updateSandbox(won[0] as string, { state: 'error', error: 'x' });
      assert.equal((await reserve(b, [freshId('sbx')])).refused, null, 'released and failed: room again');
      assert.equal((await reserve(b, [])).refused, null, 'no children: nothing to check');
    });
  });

  test('deliveries: one per (webhook, event); claims go to one claimer, are renewed by it only, and are taken over once run out', async () => {
    await twoStores(h, 'xp_claims', async (a, b) => {
      await a.insertWebhook({ id: 'wh_x', teamId: 'default', name: 'x', url: 'http://127.0.0.1:9/', events: ['sandbox.lifecycle.created'], secret: 's', createdAt: 1, createdBy: null });
      const deliveries: DeliveryRecord[] = [];
      for (let i = 0; i < 10; i++) {
        const e = await a.appendEvent({ type: 'sandbox.lifecycle.created', at: i, teamId: 'default', sandboxId: null, keyId: null, cause: 'api', data: {} });
        deliveries.push({ id: `dlv_x${i}`, webhookId: 'wh_x', eventSeq: e.seq, eventTeamSeq: e.teamSeq, eventType: e.type, status: 'pending', attempts: [], nextAttemptAt: 0, createdAt: 1 });
      }
      for (const d of deliveries) assert.equal(await a.insertDelivery(d), true);
      assert.equal(await b.insertDelivery({ ...(deliveries[0] as DeliveryRecord), id: 'dlv_again' }), false, 'the same event for the same webhook');
      const [byA, byB] = await Promise.all([a.claimDeliveries({ holder: 'host-a', leaseMs: 60_000 }, 6), b.claimDeliveries({ holder: 'host-b', leaseMs: 60_000 }, 6)]);
      const ids = [...byA, ...byB].map((d) => d.id).sort();
      assert.equal(ids.length, 10, 'every delivery claimed');
      assert.equal(new Set(ids).size, 10, 'none claimed twice');
      assert.deepEqual(await b.claimDeliveries({ holder: 'host-b', leaseMs: 60_000 }, 10).then((r) => r.filter((d) => byA.some((x) => x.id === d.id))), [], "A's claims hold");
      const mine = byA[0] as DeliveryRecord;
      assert.deepEqual((await a.claimDeliveries({ holder: 'host-a', leaseMs: 60_000 }, 20)).map((d) => d.id).sort(), byA.map((d) => d.id).sort(), "a holder's own claims come back to it (a restart)");
      assert.equal(await b.renewDeliveryClaim(mine.id, { holder: 'host-b', leaseMs: 1 }), false);
      assert.equal(await a.renewDeliveryClaim(mine.id, { holder: 'host-a', leaseMs: 100 }), true);
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual((await b.claimDeliveries({ holder: 'host-b', leaseMs: 60_000 }, 20)).map((d) => d.id).filter((id) => byA.some((x) => x.id === id)).sort(), [mine.id], 'taken over once run out');
      assert.equal(await a.renewDeliveryClaim(mine.id, { holder: 'host-a', leaseMs: 60_000 }), false, 'the old holder lost it');
      await b.updateDelivery({ ...mine, status: 'delivered', attempts: [{ at: 1, statusCode: 200, error: null, durationMs: 1 }], nextAttemptAt: null });
      assert.equal(await b.renewDeliveryClaim(mine.id, { holder: 'host-b', leaseMs: 60_000 }), false, 'settled');
      // A retry scheduled later is not claimable before it is due.
      const later = byB[0] as DeliveryRecord;
      await b.updateDelivery({ ...later, nextAttemptAt: Date.now() + 60_000 }, { holder: 'host-b', leaseMs: 1 });
      await new Promise((r) => setTimeout(r, 20));
      assert.ok(!(await a.claimDeliveries({ holder: 'host-a', leaseMs: 60_000 }, 20)).some((d) => d.id === later.id));
    });
  });

  test('events: positions are the team counters; appends are heard by the other store where it declares notifications', async () => {
    await twoStores(h, 'xp_notify', async (a, b) => {
      assert.equal(a.eventNotifications === null, b.eventNotifications === null);
      let heard = 0;
      const stop = await b.eventNotifications?.listen(() => (heard += 1), () => undefined);
      const afterConnect = heard;
      await a.appendEvent({ type: 'sandbox.lifecycle.created', at: 1, teamId: 'default', sandboxId: null, keyId: null, cause: 'api', data: {} });
      await a.appendEvent({ type: 'sandbox.lifecycle.created', at: 2, teamId: 'default', sandboxId: null, keyId: null, cause: 'api', data: {} });
      await a.appendEvent({ type: 'sandbox.lifecycle.created', at: 3, teamId: 'acme', sandboxId: null, keyId: null, cause: 'api', data: {} });
      assert.deepEqual(await b.eventPositions(), [{ teamId: 'acme', lastTeamSeq: 1 }, { teamId: 'default', lastTeamSeq: 2 }]);
      if (stop) {
        assert.equal(afterConnect, 1, 'one wake once listening (appends before it were not heard)');
        for (const end = Date.now() + 5_000; heard < afterConnect + 3 && Date.now() < end;) await new Promise((r) => setTimeout(r, 10));
        assert.equal(heard, afterConnect + 3, 'one notification per committed append');
        await stop();
        await a.appendEvent({ type: 'sandbox.lifecycle.created', at: 4, teamId: 'default', sandboxId: null, keyId: null, cause: 'api', data: {} });
        await new Promise((r) => setTimeout(r, 100));
        assert.equal(heard, afterConnect + 3, 'nothing after stop');
      }
    });
  });
}
