/**
 * Budgets per fork tree in core: over cpuSeconds (or sandboxSeconds) at a sample the whole tree is paused
 * and one budget event says so (recorded as `budget.exceeded`, the pauses with cause `budget`); forks, resumes and creates from the tree's snapshots are then 429
 * BUDGET_EXCEEDED; raising the budget lets it resume; maxSandboxes refuses a fork past it without pausing;
 * a budget set on a running sandbox counts from then; a refused pause (CHECKPOINT_BLOCKED) is retried after
 * timeoutRetryMs, never a kill; budgets survive a restart. FAKE runtime (CPU set by the test), real SQLite
 * store, manual clock.
 */
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import type { SandboxBudgetEvent } from '../lifecycle/events.js';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from '../lifecycle/create.js';
import { forkSandbox } from '../lifecycle/fork.js';
import { getSandbox } from '../lifecycle/get.js';
import { killSandbox } from '../lifecycle/kill.js';
import { resumeSandbox } from '../lifecycle/resume.js';
import { snapshotSandbox } from '../lifecycle/snapshot.js';
import { getBudgets, removeBudget, setBudget } from './budgets.js';
import { UsageSampler } from './sampler.js';

let w: TestWorld;
let events: SandboxBudgetEvent[];
beforeEach(async () => {
  w = await createTestWorld();
  events = [];
  w.core.events.onBudget((e) => events.push(e));
});
afterEach(async () => {
  await w.dispose();
});

const state = async (id: string): Promise<string> => (await getSandbox(w.core, id)).state;

/** Wait until every sandbox of `ids` is paused (budget pauses started by a fork run in the background). */
async function pausedSoon(ids: string[]): Promise<void> {
  for (const end = Date.now() + 5_000; (await Promise.all(ids.map(state))).some((s) => s !== 'paused');) {
    if (Date.now() > end) throw new Error(`not all paused: ${(await Promise.all(ids.map(state))).join(', ')}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

test('over cpuSeconds the whole tree is paused, forks and resumes are refused, a raise lets it resume', async () => {
  const root = await createSandbox(w.core, { budget: { cpuSeconds: 5 } });
  const [a, b] = await forkSandbox(w.core, root.id, { count: 2 });
  const named = await snapshotSandbox(w.core, a!.id, { name: 'tree-a' });
  const sampler = new UsageSampler(w.core);
  w.runtime.cpuUs.set(a!.id, 2_000_000);
  w.runtime.cpuUs.set(b!.id, 2_500_000);
  w.clock.advance(5_000);
  await sampler.sweep();
  assert.deepEqual([await state(root.id), await state(a!.id), await state(b!.id)], ['running', 'running', 'running'], '4.5 of 5 CPU-seconds');
  assert.equal(events.length, 0);
  w.runtime.cpuUs.set(b!.id, 3_500_000);
  w.clock.advance(5_000);
  await sampler.sweep();
  assert.deepEqual([await state(root.id), await state(a!.id), await state(b!.id)], ['paused', 'paused', 'paused'], 'the whole tree, the root too');
  assert.equal(events.length, 1);
  assert.deepEqual({ ...events[0], at: 0 }, { rootId: root.id, teamId: 'default', limit: 'cpuSeconds', max: 5, used: 5.5, at: 0 });
  // Recorded as events: `budget.exceeded` about the root, and each pause with cause `budget`.
  await w.core.eventLog.flush();
  const recorded = await w.store.listEvents({ teamId: 'default', types: ['budget.exceeded', 'sandbox.lifecycle.paused'], order: 'asc', limit: 100 });
  assert.deepEqual(recorded.map((e) => [e.type, e.sandboxId, e.cause]).sort(), [
    ['budget.exceeded', root.id, 'budget'], ...[root.id, a!.id, b!.id].map((id) => ['sandbox.lifecycle.paused', id, 'budget']),
  ].sort());
  assert.deepEqual(recorded.find((e) => e.type === 'budget.exceeded')?.data, { rootId: root.id, limit: 'cpuSeconds', max: 5, used: 5.5 });
  const [info] = await getBudgets(w.core, a!.id);
  assert.equal(info?.sandboxId, root.id);
  assert.equal(info?.exceeded, 'cpuSeconds');
  assert.equal(info?.used.cpuSeconds, 5.5);
  await assert.rejects(forkSandbox(w.core, a!.id, { count: 1 }), { code: 'BUDGET_EXCEEDED' });
  await assert.rejects(resumeSandbox(w.core, b!.id), (err: { code: string; details: Record<string, unknown> }) => {
    assert.equal(err.code, 'BUDGET_EXCEEDED');
    assert.deepEqual(err.details, { sandboxId: root.id, limit: 'cpuSeconds', max: 5, used: 5.5 });
    return true;
  });
  await assert.rejects(createSandbox(w.core, { snapshot: named.name as string }), { code: 'BUDGET_EXCEEDED' });
  assert.equal(await state(b!.id), 'paused', 'nothing changed');
  await sampler.sweep();
  assert.equal(events.length, 1, 'one event per crossing');
  // Raised above what the tree used: no longer exceeded, the tree may resume.
  const raised = await setBudget(w.core, root.id, { cpuSeconds: 20 });
  assert.equal(raised.exceeded, null);
  assert.equal(raised.limits.cpuSeconds, 20);
  assert.equal((await resumeSandbox(w.core, b!.id)).state, 'running');
  assert.equal((await forkSandbox(w.core, b!.id, { count: 1 })).length, 1);
});

test('sandboxSeconds counts running time of the tree; a budget set later counts from then', async () => {
  const sbx = await createSandbox(w.core, {});
  w.runtime.cpuUs.set(sbx.id, 10_000_000);
  w.clock.advance(60_000);
  const sampler = new UsageSampler(w.core);
  await sampler.sweep();
  const set = await setBudget(w.core, sbx.id, { cpuSeconds: 5, sandboxSeconds: 30 });
  assert.deepEqual(set.used, { cpuSeconds: 0, sandboxSeconds: 0, sandboxes: 1 }, 'counted from now: its first minute and 10 CPU-seconds are the base');
  w.clock.advance(20_000);
  await sampler.sweep();
  assert.equal(await state(sbx.id), 'running');
  w.clock.advance(10_000);
  await sampler.sweep();
  assert.equal(await state(sbx.id), 'paused', '30 sandbox-seconds');
  assert.equal(events[0]?.limit, 'sandboxSeconds');
  // A raise of an existing budget keeps its start.
  const raised = await setBudget(w.core, sbx.id, { sandboxSeconds: 100 });
  assert.equal(raised.since, set.since);
  assert.equal(raised.limits.cpuSeconds, 5, 'fields not given stay');
  assert.equal(raised.used.sandboxSeconds, 30);
  await removeBudget(w.core, sbx.id);
  assert.deepEqual(await getBudgets(w.core, sbx.id), []);
});

test('maxSandboxes refuses a fork past it (nothing paused); a killed member frees its place', async () => {
  const root = await createSandbox(w.core, { budget: { maxSandboxes: 3 } });
  const [a] = await forkSandbox(w.core, root.id, { count: 1 });
  await assert.rejects(forkSandbox(w.core, a!.id, { count: 2 }), (err: { code: string; details: Record<string, unknown> }) => {
    assert.equal(err.code, 'BUDGET_EXCEEDED');
    assert.deepEqual(err.details, { sandboxId: root.id, limit: 'maxSandboxes', max: 3, used: 2, requested: 2 });
    return true;
  });
  assert.equal((await w.store.subtree(root.id)).length, 2, 'nothing forked');
  assert.equal(await state(a!.id), 'running');
  await forkSandbox(w.core, a!.id, { count: 1 });
  await assert.rejects(forkSandbox(w.core, root.id, { count: 1 }), { code: 'BUDGET_EXCEEDED' });
  await killSandbox(w.core, a!.id);
  assert.equal((await forkSandbox(w.core, root.id, { count: 1 })).length, 1);
});

test('a refused pause leaves the sandbox running and is retried after timeoutRetryMs; budgets survive a restart', async () => {
  const sbx = await createSandbox(w.core, { budget: { cpuSeconds: 1 } });
  w.runtime.guest(sbx.id).endpoints.push('10.0.0.2:9 -> 1.2.3.4:443 ESTABLISHED');
  w.runtime.cpuUs.set(sbx.id, 2_000_000);
  w.clock.advance(5_000);
  const sampler = new UsageSampler(w.core);
  await sampler.sweep();
  assert.equal(await state(sbx.id), 'running', 'CHECKPOINT_BLOCKED: still running, never killed');
  w.runtime.guest(sbx.id).endpoints.length = 0;
  await sampler.sweep();
  assert.equal(await state(sbx.id), 'running', 'not retried before timeoutRetryMs');
  w.clock.advance(w.core.options.timeoutRetryMs);
  await sampler.sweep();
  assert.equal(await state(sbx.id), 'paused');
  await w.close();
  w = await createTestWorld({}, w);
  const [info] = await getBudgets(w.core, sbx.id);
  assert.equal(info?.exceeded, 'cpuSeconds');
  assert.equal(info?.used.cpuSeconds, 2);
  await assert.rejects(resumeSandbox(w.core, sbx.id), { code: 'BUDGET_EXCEEDED' });
});

test('a fork reads the tree first: over its budget since the last sample, it is refused at once, marked and paused', async () => {
  const root = await createSandbox(w.core, { budget: { cpuSeconds: 5 } });
  const sampler = new UsageSampler(w.core);
  w.runtime.cpuUs.set(root.id, 2_000_000);
  w.clock.advance(5_000);
  await sampler.sweep();
  // 4 more CPU-seconds since that sample: 6 of 5, which no sample has seen yet.
  w.runtime.cpuUs.set(root.id, 6_000_000);
  w.clock.advance(2_000);
  await assert.rejects(forkSandbox(w.core, root.id, { count: 2 }), (err: { code: string; details: Record<string, unknown> }) => {
    assert.deepEqual([err.code, err.details.limit, err.details.used], ['BUDGET_EXCEEDED', 'cpuSeconds', 6]);
    return true;
  });
  assert.equal((await w.store.subtree(root.id)).length, 1, 'nothing forked');
  assert.deepEqual(events.map((e) => [e.rootId, e.used]), [[root.id, 6]], 'the event at once, not at the next sample');
  await pausedSoon([root.id]);
  await assert.rejects(resumeSandbox(w.core, root.id), { code: 'BUDGET_EXCEEDED' });
  assert.equal(events.length, 1);
});

test("a fork's children are read and judged as they start: restores that take the tree over pause it at once", async () => {
  const root = await createSandbox(w.core, { budget: { cpuSeconds: 2.5 } });
  w.runtime.cpuUs.set(root.id, 1_000_000);
  // Each restore (the parent's after its fork checkpoint, and each child's) costs a CPU-second.
  w.runtime.restoreCpuUs = 1_000_000;
  const children = await forkSandbox(w.core, root.id, { count: 2 });
  const [info] = await getBudgets(w.core, root.id);
  assert.deepEqual([info?.exceeded, info?.used.cpuSeconds], ['cpuSeconds', 4], 'the parent before its checkpoint, then three restores: marked when the fork answers');
  assert.deepEqual(events.map((e) => [e.rootId, e.used]), [[root.id, 4]]);
  await pausedSoon([root.id, ...children.map((c) => c.id)]);
  const [after] = await getBudgets(w.core, root.id);
  assert.equal(after?.used.cpuSeconds, 4, 'nothing ran on unseen: the tree is exactly where the check found it');
});

test('a budget set on a running sandbox takes its base from a reading now, not from the last sample', async () => {
  const sbx = await createSandbox(w.core, {});
  const sampler = new UsageSampler(w.core);
  w.runtime.cpuUs.set(sbx.id, 3_000_000);
  w.clock.advance(2_000);
  const set = await setBudget(w.core, sbx.id, { cpuSeconds: 1 });
  assert.deepEqual([set.used.cpuSeconds, set.exceeded], [0, null], 'the 3 CPU-seconds before are its base');
  w.clock.advance(5_000);
  await sampler.sweep();
  assert.equal(await state(sbx.id), 'running', 'nothing was used since the budget was set');
  assert.equal(events.length, 0);
});
