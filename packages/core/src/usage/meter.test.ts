/**
 * Metering in core: running and paused time exact across pause/resume (memory MiB·s while running, the
 * pause image's byte·s while paused), CPU counted per runtime instance (a resume's new instance from zero,
 * the last reading before a checkpoint kept), bytes in and out from the slot's link (the first reading is
 * the baseline), forks in their own rows and under their root's tree, a daemon restart (clean or a crash
 * between samples) neither dropping nor double counting, the report's groupings, windows and bad input,
 * team scoping, live metrics samples. FAKE runtime (its counters set by the test), real SQLite store,
 * manual clock.
 */
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseWarmPoolSpec } from '@ramify/contracts';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from '../lifecycle/create.js';
import { forkSandbox } from '../lifecycle/fork.js';
import { killSandbox } from '../lifecycle/kill.js';
import { pauseSandbox } from '../lifecycle/pause.js';
import { resumeSandbox } from '../lifecycle/resume.js';
import { getSandboxMetrics } from './metrics.js';
import { getUsage } from './report.js';
import { getSandboxTree } from './tree.js';

let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld();
});
afterEach(async () => {
  await w.dispose();
});

const FROM = '2000-01-01';
const usageOf = async (id: string, team = 'default') => (await getUsage(w.core, team, { from: FROM, sandboxId: id })).rows[0];

test('running and paused time are exact across pause and resume, with memory and image byte·s', async () => {
  const sbx = await createSandbox(w.core, { memoryMB: 256 });
  w.clock.advance(10_000);
  const paused = await pauseSandbox(w.core, sbx.id);
  const imageBytes = (await w.store.getSnapshot(paused.pausedSnapshotId as string))?.sizeBytes ?? 0;
  assert.ok(imageBytes > 0);
  w.clock.advance(20_000);
  await resumeSandbox(w.core, sbx.id);
  w.clock.advance(5_000);
  // Live: the 5 s since the resume are not written yet, and count all the same.
  let row = await usageOf(sbx.id);
  assert.equal(row?.runningSeconds, 15);
  assert.equal(row?.pausedSeconds, 20);
  assert.equal(row?.memoryMiBSeconds, 256 * 15);
  assert.equal(row?.diskByteSeconds, imageBytes * 20);
  await killSandbox(w.core, sbx.id);
  w.clock.advance(60_000);
  row = await usageOf(sbx.id);
  assert.equal(row?.runningSeconds, 15, 'a killed sandbox counts no more');
  assert.equal(row?.pausedSeconds, 20);
});

test('CPU per instance: the last reading before a checkpoint is kept, a resumed instance counts from zero; bytes from the link', async () => {
  const sbx = await createSandbox(w.core, {});
  const slot = (await w.store.getSandbox(sbx.id))?.slot as number;
  w.network.traffic.set(slot, { inBytes: 5_000, outBytes: 7_000 }); // older than the sandbox: the baseline
  await w.core.meter.sampleRunning();
  w.runtime.cpuUs.set(sbx.id, 2_000_000);
  w.network.traffic.set(slot, { inBytes: 6_000, outBytes: 10_000 });
  w.clock.advance(5_000);
  await w.core.meter.sampleRunning();
  w.runtime.cpuUs.set(sbx.id, 2_500_000); // used after the last sample, before the pause
  await pauseSandbox(w.core, sbx.id);
  w.runtime.cpuUs.set(sbx.id, 300_000); // the resumed instance's own counter
  await resumeSandbox(w.core, sbx.id);
  w.runtime.cpuUs.set(sbx.id, 1_300_000);
  w.clock.advance(5_000);
  await w.core.meter.sampleRunning();
  const row = await usageOf(sbx.id);
  assert.equal(row?.cpuSeconds, 2.5 + 1.3);
  assert.equal(row?.netInBytes, 1_000);
  assert.equal(row?.netOutBytes, 3_000);
  assert.equal(row?.memoryPeakBytes, 64 * 1024 * 1024);
});

test('a restart, clean or a crash between samples, neither drops nor double counts', async () => {
  const sbx = await createSandbox(w.core, {});
  w.runtime.cpuUs.set(sbx.id, 1_000_000);
  w.clock.advance(5_000);
  await w.core.meter.sampleRunning();
  w.runtime.cpuUs.set(sbx.id, 1_700_000); // read by nobody before the crash
  w.clock.advance(3_000);
  await w.close(); // the store closes: no final write (a kill -9 between samples)
  w = await createTestWorld({}, w);
  w.clock.advance(4_000); // the daemon was down; the sandbox ran on
  w.runtime.cpuUs.set(sbx.id, 2_000_000);
  await w.core.meter.sampleRunning();
  let row = await usageOf(sbx.id);
  assert.equal(row?.cpuSeconds, 2, 'the instance counter, counted once');
  assert.equal(row?.runningSeconds, 12, 'the downtime ran too');
  await w.core.meter.sampleRunning();
  await w.core.meter.sampleRunning();
  row = await usageOf(sbx.id);
  assert.equal(row?.cpuSeconds, 2, 'readings of an unchanged counter add nothing');
});

test('forks have rows of their own and group under their root; groupBy template, team and day; windows', async () => {
  const root = await createSandbox(w.core, {});
  w.runtime.cpuUs.set(root.id, 1_000_000);
  w.clock.advance(2_000);
  const [child] = await forkSandbox(w.core, root.id, { count: 1 });
  w.runtime.cpuUs.set(child!.id, 4_000_000);
  w.clock.advance(3_000);
  await w.core.meter.sampleRunning();
  const [grandchild] = await forkSandbox(w.core, child!.id, { count: 1 });
  w.clock.advance(1_000);
  const bySandbox = await getUsage(w.core, 'default', { from: FROM });
  assert.deepEqual(bySandbox.rows.map((r) => r.key).sort(), [root.id, child!.id, grandchild!.id].sort());
  const tree = await getUsage(w.core, 'default', { from: FROM, groupBy: 'tree' });
  assert.equal(tree.rows.length, 1);
  assert.equal(tree.rows[0]?.key, root.id);
  assert.equal(tree.rows[0]?.sandboxes, 3);
  assert.equal(tree.rows[0]?.cpuSeconds, 5);
  assert.equal(tree.rows[0]?.runningSeconds, 6 + 4 + 1);
  assert.deepEqual((await getUsage(w.core, 'default', { from: FROM, groupBy: 'template' })).rows.map((r) => [r.key, r.sandboxes]), [['tpl_base', 3]]);
  assert.deepEqual((await getUsage(w.core, 'default', { from: FROM, groupBy: 'team' })).rows.map((r) => [r.key, r.runningSeconds]), [['default', 11]]);
  const day = new Date(w.clock.now()).toISOString().slice(0, 10);
  assert.deepEqual((await getUsage(w.core, 'default', { from: FROM, groupBy: 'day' })).rows.map((r) => r.key), [day]);
  // A window after it all: nothing.
  assert.deepEqual((await getUsage(w.core, 'default', { from: String(w.clock.now() + 7_200_000), to: String(w.clock.now() + 9_000_000) })).rows, []);
  // The tree route's view: the same figures per node.
  const view = await getSandboxTree(w.core, grandchild!.id);
  assert.equal(view.rootId, root.id);
  assert.equal(view.size, 3);
  assert.equal(view.root.children[0]?.sandboxId, child!.id);
  assert.equal(view.root.children[0]?.children[0]?.sandboxId, grandchild!.id);
  assert.equal(view.root.children[0]?.usage.cpuSeconds, 4);
});

test("bad windows are refused; another team's usage is invisible", async () => {
  const sbx = await createSandbox(w.core, {});
  w.clock.advance(1_000);
  for (const q of [{ from: 'yesterday' }, { to: '2025-13-45' }, { from: '2025-01-02', to: '2025-01-01' }, { from: '12abc' }]) {
    await assert.rejects(getUsage(w.core, 'default', q), { code: 'VALIDATION_FAILED' }, JSON.stringify(q));
  }
  assert.equal((await getUsage(w.core, 'default', { from: FROM })).rows.length, 1);
  assert.deepEqual((await getUsage(w.core, 'other', { from: FROM })).rows, []);
  assert.deepEqual((await getUsage(w.core, 'other', { from: FROM, sandboxId: sbx.id })).rows, []);
});

test('live metrics: one sample per reading of a running instance, E2B field names; none while paused', async () => {
  const sbx = await createSandbox(w.core, { cpuCount: 2, memoryMB: 512 });
  w.runtime.cpuUs.set(sbx.id, 0);
  await w.core.meter.sampleRunning();
  for (let i = 1; i <= 3; i++) {
    w.runtime.cpuUs.set(sbx.id, i * 5_000_000); // 1 core of 2 over 5 s
    w.clock.advance(5_000);
    await w.core.meter.sampleRunning();
  }
  const metrics = await getSandboxMetrics(w.core, sbx.id, {});
  assert.equal(metrics.length, 3);
  assert.deepEqual(metrics[0], { timestamp: metrics[0]!.timestamp, cpuCount: 2, cpuUsedPct: 50, memUsed: 64 * 1024 * 1024, memTotal: 512 * 1024 * 1024, diskUsed: null, diskTotal: null });
  const lastTwo = await getSandboxMetrics(w.core, sbx.id, { start: String(w.clock.now() - 5_000) });
  assert.equal(lastTwo.length, 2);
  await pauseSandbox(w.core, sbx.id);
  w.clock.advance(5_000);
  await w.core.meter.sampleRunning();
  assert.equal((await getSandboxMetrics(w.core, sbx.id, {})).length, 3);
  await assert.rejects(getSandboxMetrics(w.core, sbx.id, { end: 'soon' }), { code: 'VALIDATION_FAILED' });
  await killSandbox(w.core, sbx.id);
  await assert.rejects(getSandboxMetrics(w.core, sbx.id, {}), { code: 'SANDBOX_NOT_FOUND' });
});

test("a claimed warm pool sandbox counts from its claim: the pool's restore and idle time are not its use", async () => {
  await w.dispose();
  w = await createTestWorld({ warmPool: parseWarmPoolSpec('base=1'), warmPoolQuietMs: 0 });
  await w.core.pool.start();
  await w.core.pool.filled();
  const [pooledId] = w.runtime.instances.keys();
  w.runtime.cpuUs.set(pooledId!, 4_000_000); // what it used in the pool
  w.clock.advance(60_000);
  const sbx = await createSandbox(w.core, {});
  assert.equal(sbx.id, pooledId, 'the create claimed the pooled sandbox');
  w.runtime.cpuUs.set(sbx.id, 4_500_000);
  w.clock.advance(5_000);
  await w.core.meter.sampleRunning();
  const row = await usageOf(sbx.id);
  assert.equal(row?.cpuSeconds, 0.5);
  assert.equal(row?.runningSeconds, 5);
  await w.core.pool.close();
});
