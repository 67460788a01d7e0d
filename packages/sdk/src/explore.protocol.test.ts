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
    assert.deepEqual(report.entries.map((e) => [e.name, e.score, e.outcome]), [
      ['low', 2, 'killed'], ['high', 18, 'winner'], ['broken', -Infinity, 'killed'], ['mid', 10, 'killed'],
    ]);
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

  test('pickWinner: highest score, ties go to the faster run, then the earlier strategy', () => {
    assert.equal(pickWinner([{ score: 1, durationMs: 5 }, { score: 1, durationMs: 3 }, { score: 0, durationMs: 1 }]), 1);
    assert.equal(pickWinner([{ score: 1, durationMs: 3 }, { score: 1, durationMs: 3 }]), 0);
    assert.equal(pickWinner([{ score: 5, durationMs: 1, error: { message: 'x' } }, { score: -Infinity, durationMs: 9 }]), 1);
    assert.equal(pickWinner([{ score: -Infinity, durationMs: 1, error: { message: 'x' } }]), -1);
  });
});
