/**
 * Budgets at a fork, through a REAL daemon (gVisor runsc, the sandboxes' cgroups), prefix `rmbf`. The daemon
 * samples every 10 minutes, so no sample falls inside this file: everything judged here is judged by the fork
 * itself, between two samples, which is where a tree used to overshoot.
 *
 * 1. A sandbox spinning a core with `cpuSeconds: 1.5` set on it goes over while no sample looks: its fork is
 *    429 BUDGET_EXCEEDED at once (the fork reads the tree's counters first), the budget is marked with its
 *    event, and the sandbox is paused right after, so the tree ends within the pause's own latency of the
 *    limit. Before, the fork went through on the last sample's figures and the tree (now three spinning
 *    sandboxes) ran on until the next sample.
 * 2. An idle sandbox with `cpuSeconds: 0.2`, forked in two: the restores (the parent's after its fork
 *    checkpoint, each child's) cost more than that, and as the fork answers the budget is already exceeded
 *    (the children were read as they started and judged then), the whole tree being paused.
 *
 * Skipped, with the reason, when not root, without runsc, or without the prepared rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BudgetExceededError, Sandbox } from '@ramify/sdk';
import { openRealDaemon, realRuntimeSkip, until, type RealDaemon } from './real-test-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs);

const PREFIX = 'rmbf';
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('budgets at a fork, between samples (gVisor)', { skip, timeout: 300_000 }, () => {
  let daemon: RealDaemon;
  before(async () => {
    daemon = await openRealDaemon({ runtime: 'gvisor', prefix: PREFIX, rootfs: rootfs as string, templateId: 'tpl_rmbf', coreOptions: { usageSampleMs: 600_000 } });
  });
  after(async () => {
    await daemon?.close();
  });

  /** Every sandbox of `ids` paused (the budget's pauses run after the call that found the tree over). */
  const allPaused = (ids: string[]): Promise<void> =>
    until(async () => (await Promise.all(ids.map((id) => Sandbox.getInfo(id, daemon.conn)))).every((s) => s.state === 'paused'), `${ids.join(', ')} paused`, 60_000);

  test('a spinning sandbox over its budget since the last sample: its fork is 429 at once and the tree is paused', async (t) => {
    const sbx = await Sandbox.create({ ...daemon.conn, template: 'base', timeoutMs: 600_000 });
    t.after(() => sbx.kill().catch(() => undefined));
    await sbx.commands.run('sh -c "while :; do :; done"', { background: true });
    await sbx.setBudget({ cpuSeconds: 1.5 });
    await sleep(2_500);
    const refused = await sbx.fork({ count: 2 }).then(() => assert.fail('a tree over its budget cannot fork'), (err: unknown) => err);
    const refusedAt = Date.now();
    assert.ok(refused instanceof BudgetExceededError, String(refused));
    const used = refused.details?.used as number;
    assert.equal(refused.details?.limit, 'cpuSeconds');
    assert.ok(used >= 1.5, `the refusal counts the CPU no sample saw: ${used}`);
    assert.equal((await daemon.call('GET', '/v1/sandboxes')).json.sandboxes.length, 1, 'nothing forked');
    await allPaused([sbx.sandboxId]);
    const pausedAfterS = (Date.now() - refusedAt) / 1000;
    const [budget] = await sbx.getBudgets();
    process.stdout.write(`# refused at ${used} CPU-s (limit 1.5); paused ${pausedAfterS.toFixed(2)} s later at ${budget!.used.cpuSeconds} CPU-s\n`);
    assert.equal(budget?.exceeded, 'cpuSeconds');
    // One sandbox spinning one core until its pause: the overshoot past the refusal is the pause's latency.
    assert.ok(budget!.used.cpuSeconds <= used + pausedAfterS + 0.5, `${budget!.used.cpuSeconds} CPU-s once paused`);
    const events = (await daemon.call('GET', `/v1/events?sandboxId=${sbx.sandboxId}&type=budget.exceeded,sandbox.lifecycle.paused`)).json.events as Array<{ type: string; cause: string }>;
    assert.deepEqual(events.map((e) => [e.type, e.cause]), [['budget.exceeded', 'budget'], ['sandbox.lifecycle.paused', 'budget']]);
  });

  test("a fork whose restores take its tree over: the budget is exceeded as the fork answers, and the tree is paused", async (t) => {
    const sbx = await Sandbox.create({ ...daemon.conn, template: 'base', timeoutMs: 600_000 });
    t.after(() => sbx.kill().catch(() => undefined));
    await sbx.setBudget({ cpuSeconds: 0.2 });
    const children = await sbx.fork({ count: 2 });
    t.after(() => Promise.all(children.map((c) => c.kill().catch(() => undefined))));
    const [budget] = await sbx.getBudgets();
    const events = (await daemon.call('GET', `/v1/events?sandboxId=${sbx.sandboxId}&type=budget.exceeded`)).json.events as Array<{ data: { used: number } }>;
    process.stdout.write(`# as the fork answered: ${budget!.used.cpuSeconds} CPU-s of 0.2; the budget event at ${events[0]?.data.used} CPU-s\n`);
    assert.equal(events.length, 1, 'judged (marked, its event out) when the children started, not at the next sample, minutes away');
    assert.equal(budget?.exceeded, 'cpuSeconds');
    await allPaused([sbx.sandboxId, ...children.map((c) => c.sandboxId)]);
    await assert.rejects(children[0]!.fork({ count: 1 }), { code: 'BUDGET_EXCEEDED' });
  });
});
