/**
 * Protocol tests of `Sandbox.explore()` against the in-test contract fixture: one fork call, winner
 * selection (score, then speed), failures recorded, losers killed. The fixture's "sandboxes" are
 * records; strategies here are plain functions, so this covers the selection logic and API use only.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startContractServer, type ContractServer } from './testing/contract-server.js';
import { ExploreFailedError, Sandbox, pickWinner, type Strategy } from './index.js';

let server: ContractServer;
const conn = () => ({ apiUrl: server.url, apiKey: server.apiKey });
before(async () => { server = await startContractServer(); });
after(async () => { await server.close(); });

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/** A strategy that never ends on its own. */
const never = (): Promise<never> => new Promise<never>(() => undefined);

const forkCalls = () => server.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/fork')).length;

describe('protocol: Sandbox.explore', () => {
  test('forks once, runs every strategy in its own fork, keeps the best, kills the rest', async () => {
    const source = await Sandbox.create(conn());
    const before = forkCalls();
    const ran = new Set<string>();
    const strategy = (name: string, value: number): Strategy<number> => ({
      name,
      run: async (sbx) => {
        ran.add(sbx.sandboxId);
        await sbx.files.write('/answer', String(value));
        return value;
      },
    });
    const report = await Sandbox.explore(source, [
      strategy('low', 1), strategy('high', 9),
      { name: 'broken', run: async () => { throw new Error('no luck'); } },
      strategy('mid', 5),
    ], { score: async (result, sbx) => Number(await sbx.files.read('/answer')) + result });
    assert.equal(forkCalls() - before, 1);
    assert.equal(ran.size, 3);
    assert.equal(report.winner.strategy, 'high');
    assert.equal(report.winner.score, 18);
    assert.equal(report.winner.result, 9);
    assert.equal(await report.winner.sandbox.isRunning(), true);
    assert.deepEqual(report.entries.map((e) => [e.name, e.score, e.outcome, e.status]), [
      ['low', 2, 'killed', 'finished'], ['high', 18, 'winner', 'finished'], ['broken', -Infinity, 'killed', 'failed'], ['mid', 10, 'killed', 'finished'],
    ]);
    assert.equal(report.stoppedBy, null);
    assert.equal(report.entries[2].error?.message, 'no luck');
    for (const e of report.entries) {
      const state = (await Sandbox.getInfo(e.sandboxId, conn())).state;
      assert.equal(state, e.outcome === 'winner' ? 'running' : 'killed');
      assert.equal((await Sandbox.getInfo(e.sandboxId, conn())).parentId, source.sandboxId);
    }
    assert.equal(report.forkTree.sandboxId, source.sandboxId);
    assert.equal(report.forkTree.children.length, 4);
    assert.deepEqual(report.forkTree.children.map((c) => c.error), [null, null, 'no luck', null], 'the tree marks the failed strategy');
    assert.equal(report.forkTree.error, null);
    assert.equal(await source.isRunning(), true);
  });

  test('keep: all leaves every fork running; a throwing score counts as a failure', async () => {
    const source = await Sandbox.create(conn());
    const report = await Sandbox.explore(source, [
      { name: 'a', run: async () => 'a' },
      { name: 'b', run: async () => 'b' },
    ], { keep: 'all', score: (r) => { if (r === 'a') throw new Error('unscorable'); return 1; } });
    assert.equal(report.winner.strategy, 'b');
    assert.deepEqual(report.entries.map((e) => e.outcome), ['kept', 'winner']);
    assert.equal(report.entries[0].error?.message, 'unscorable');
    for (const e of report.entries) assert.equal((await Sandbox.getInfo(e.sandboxId, conn())).state, 'running');
  });

  test('all strategies failing throws ExploreFailedError and kills every fork', async () => {
    const source = await Sandbox.create(conn());
    await assert.rejects(Sandbox.explore(source, [
      { name: 'x', run: async () => { throw new Error('x failed'); } },
      { name: 'y', run: async (sbx) => { await sbx.commands.run('exit 2'); } },
    ], { score: () => 1 }), (e: unknown) => {
      assert.ok(e instanceof ExploreFailedError);
      assert.equal(e.code, 'EXPLORE_FAILED');
      assert.equal(e.entries[1].error?.code, 'COMMAND_EXIT');
      assert.ok(e.entries.every((x) => x.outcome === 'killed'));
      return true;
    });
  });

  test('a budget that runs out: explore returns the report, the finished strategy wins, the unfinished one is stopped and left paused', async () => {
    const source = await Sandbox.create(conn());
    const report = await Sandbox.explore(source, [
      { name: 'quick', run: async () => 7 },
      { name: 'endless', run: async () => { await sleep(30); server.state.budgets.exceed(source.sandboxId); return never(); } },
    ], { score: (r) => r, budget: { cpuSeconds: 5 }, budgetPollMs: 10 });
    assert.equal(report.stoppedBy, 'budget');
    if (report.stoppedBy !== 'budget') return;
    assert.deepEqual([report.budget.exceeded, report.budget.used.cpuSeconds, report.budget.limits.cpuSeconds], ['cpuSeconds', 5.5, 5]);
    assert.deepEqual([report.winner?.strategy, report.winner?.result, report.winner?.score], ['quick', 7, 7], 'the best of what finished');
    assert.deepEqual(report.entries.map((e) => [e.name, e.status, e.outcome, e.error?.code ?? null]), [['quick', 'finished', 'winner', null], ['endless', 'stopped', 'paused', 'BUDGET_EXCEEDED']]);
    assert.match(report.entries[1]!.error!.message, /budget ran out \(cpuSeconds 5\.5 of 5\) before this strategy ended/);
    assert.deepEqual(report.forkTree.children.map((c) => c.outcome), ['winner', 'paused']);
    for (const e of report.entries) assert.equal((await Sandbox.getInfo(e.sandboxId, conn())).state, 'paused', `${e.name}: the daemon paused the tree, and explore killed nothing`);
  });

  test('a budget that stops every strategy: the report with no winner, not ExploreFailedError', async () => {
    const source = await Sandbox.create(conn());
    const report = await Sandbox.explore(source, [
      { name: 'a', run: async () => { await sleep(20); server.state.budgets.exceed(source.sandboxId, 'sandboxSeconds', 61); return never(); } },
      { name: 'b', run: async () => never() },
    ], { score: () => 1, budget: { sandboxSeconds: 60 }, budgetPollMs: 10 });
    assert.equal(report.stoppedBy, 'budget');
    assert.equal(report.winner, null);
    assert.deepEqual(report.entries.map((e) => [e.status, e.outcome]), [['stopped', 'paused'], ['stopped', 'paused']]);
    assert.match(report.entries[0]!.error!.message, /sandboxSeconds 61 of 60/);
  });

  test("a strategy whose command broke because the budget paused its fork is stopped, not failed (found without waiting for the poll)", async () => {
    const source = await Sandbox.create(conn());
    const report = await Sandbox.explore(source, [
      { name: 'ok', run: async () => 'done' },
      { name: 'cut', run: async (sbx) => { await sleep(20); server.state.budgets.exceed(source.sandboxId); return (await sbx.commands.run('echo after the pause')).stdout; } },
    ], { score: () => 1, budget: { cpuSeconds: 5 }, budgetPollMs: 600_000 });
    assert.equal(report.stoppedBy, 'budget');
    assert.deepEqual(report.entries.map((e) => [e.name, e.status, e.outcome]), [['ok', 'finished', 'winner'], ['cut', 'stopped', 'paused']]);
    assert.equal((await Sandbox.getInfo(report.entries[1]!.sandboxId, conn())).state, 'paused', 'its fork is not killed as a loser would be');
  });

  test('with a budget that does not run out, explore reports as without one; all failing still throws', async () => {
    const source = await Sandbox.create(conn());
    const report = await Sandbox.explore(source, [{ name: 'one', run: async () => 3 }], { score: (r) => r, budget: { cpuSeconds: 100 }, budgetPollMs: 10 });
    assert.deepEqual([report.stoppedBy, report.winner?.strategy, report.entries[0]?.status], [null, 'one', 'finished']);
    await assert.rejects(Sandbox.explore(source, [{ name: 'x', run: async () => { throw new Error('no'); } }], { score: () => 1, budget: { cpuSeconds: 100 }, budgetPollMs: 10 }), ExploreFailedError);
  });

  test('pickWinner: highest score, ties go to the faster run, then the earlier strategy', () => {
    assert.equal(pickWinner([{ score: 1, durationMs: 5 }, { score: 1, durationMs: 3 }, { score: 0, durationMs: 1 }]), 1);
    assert.equal(pickWinner([{ score: 1, durationMs: 3 }, { score: 1, durationMs: 3 }]), 0);
    assert.equal(pickWinner([{ score: 5, durationMs: 1, error: { message: 'x' } }, { score: -Infinity, durationMs: 9 }]), 1);
    assert.equal(pickWinner([{ score: -Infinity, durationMs: 1, error: { message: 'x' } }]), -1);
  });
});
