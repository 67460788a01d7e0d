/**
 * A budget per fork tree through a REAL daemon (gVisor runsc, namespaces, cgroups) and the SDK:
 * `Sandbox.explore` with `budget: { cpuSeconds: 5 }` over two strategies that spin forever. At the first
 * sample after the tree passed 5 CPU-seconds the daemon emits the budget event on its bus and pauses the
 * whole tree (the source and both forks; never a kill); explore stops waiting and reports both strategies
 * stopped by the budget with their forks left `paused`. Forks and resumes in the tree are then 429
 * BUDGET_EXCEEDED (and the CLI shows the tree); after `ramify sandbox budget` raises it, the paused forks
 * resume and run. Skipped, with the reason, when not root, without runsc, or without the prepared rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ExploreFailedError, Sandbox, type Strategy } from '@ramify/sdk';
import type { SandboxBudgetEvent } from '@ramify/core';
import { cli } from './real-ssh-support.js';
import { openRealDaemon, realRuntimeSkip, until, type RealDaemon } from './real-test-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs);
const SAMPLE_MS = 1_000;

let daemon: RealDaemon | undefined;

describe('real budgets per fork tree (gVisor)', { skip, timeout: 600_000 }, () => {
  before(async () => {
    daemon = await openRealDaemon({ runtime: 'gvisor', prefix: 'rmg', rootfs: rootfs as string, templateId: 'tpl_rmg', serve: { coreOptions: { usageSampleMs: SAMPLE_MS } } });
  });
  after(async () => {
    await daemon?.close();
  });

  test('explore with cpuSeconds 5 over spinning strategies: the tree is paused, the event emitted, forks resumable after a raise', async () => {
    const { conn, call, server } = daemon!;
    const events: SandboxBudgetEvent[] = [];
    server.core.events.onBudget((e) => events.push(e));
    const source = await Sandbox.create({ ...conn, template: 'base', timeoutMs: 600_000 });
    const spin = (name: string): Strategy<number | null> => ({ name, run: async (sbx) => (await sbx.commands.run('sh -c "while :; do :; done"', { timeoutMs: 0 })).exitCode });
    const explored = await Sandbox.explore(source, [spin('left'), spin('right')], { score: () => 1, budget: { cpuSeconds: 5 }, budgetPollMs: 250 }).then(
      () => assert.fail('two strategies that spin forever cannot finish'),
      (err: unknown) => err,
    );
    assert.ok(explored instanceof ExploreFailedError, String(explored));
    assert.deepEqual(explored.entries.map((e) => [e.outcome, e.error?.code]), [['paused', 'BUDGET_EXCEEDED'], ['paused', 'BUDGET_EXCEEDED']]);
    const forks = explored.entries.map((e) => e.sandboxId);

    assert.equal(events.length, 1, 'one budget event');
    const [event] = events;
    assert.equal(event?.rootId, source.sandboxId);
    assert.equal(event?.limit, 'cpuSeconds');
    assert.equal(event?.max, 5);
    // Found at the first sample past 5 CPU-seconds: two spinning forks on at most 2 cores add at most 2
    // CPU-seconds per sampling interval (1 s here; 3 intervals of slack for a loaded host).
    assert.ok(event!.used >= 5 && event!.used < 5 + 2 * 3 * (SAMPLE_MS / 1000), `used ${event!.used} when found`);
    // Explore returns once the budget is marked exceeded; the daemon's pauses of the tree are under way.
    for (const id of [source.sandboxId, ...forks]) {
      await until(async () => (await Sandbox.getInfo(id, conn)).state === 'paused', `${id} is paused`, 60_000);
    }
    const [budget] = await source.getBudgets();
    process.stdout.write(`# budget event at ${event!.used.toFixed(2)} CPU-s; the tree had used ${budget!.used.cpuSeconds} CPU-s once paused\n`);
    assert.equal(budget?.exceeded, 'cpuSeconds');

    const fork = await call('POST', `/v1/sandboxes/${forks[0]}/fork`, { count: 1 });
    assert.equal(fork.status, 429);
    assert.equal(fork.json.error.code, 'BUDGET_EXCEEDED');
    const resume = await call('POST', `/v1/sandboxes/${forks[1]}/resume`);
    assert.equal(resume.status, 429);
    assert.equal(resume.json.error.details.sandboxId, source.sandboxId);
    const tree = await cli({ apiUrl: conn.apiUrl, apiKey: conn.apiKey }, ['sandbox', 'tree', forks[0]!, '--json']);
    assert.equal(tree.code, 0, tree.stderr);
    const view = JSON.parse(tree.stdout) as { rootId: string; size: number; root: { state: string; budget: { exceeded: string }; children: Array<{ state: string }> } };
    assert.deepEqual([view.rootId, view.size, view.root.state, view.root.budget.exceeded, view.root.children.map((c) => c.state)], [source.sandboxId, 3, 'paused', 'cpuSeconds', ['paused', 'paused']]);

    const raised = await cli({ apiUrl: conn.apiUrl, apiKey: conn.apiKey }, ['sandbox', 'budget', source.sandboxId, '--cpu-seconds', '1000', '--json']);
    assert.equal(raised.code, 0, raised.stderr);
    assert.deepEqual([JSON.parse(raised.stdout).exceeded, JSON.parse(raised.stdout).limits.cpuSeconds], [null, 1000]);
    for (const id of forks) assert.equal((await Sandbox.resume(id, conn)).state, 'running');
    // The spin goes on where it stopped: the forks use CPU again.
    const before = (await source.getBudgets())[0]!.used.cpuSeconds;
    await new Promise((resolve) => setTimeout(resolve, 3 * SAMPLE_MS));
    assert.ok((await source.getBudgets())[0]!.used.cpuSeconds > before + 1, 'the resumed forks spin on');
    for (const id of [...forks, source.sandboxId]) await Sandbox.kill(id, conn);
  });
});
