/**
 * Use-case tests of egress policies with FAKE runtime, network, agent and egress enforcer (core logic
 * only: what is stored, what core asks the enforcer to enforce and when) and a real SQLite store.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RamifyError } from '@ramify/contracts';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from '../lifecycle/create.js';
import { forkSandbox } from '../lifecycle/fork.js';
import { killSandbox } from '../lifecycle/kill.js';
import { listSandboxes, parseListQuery } from '../lifecycle/list.js';
import { pauseSandbox } from '../lifecycle/pause.js';
import { reconcile } from '../lifecycle/reconcile.js';
import { resumeSandbox } from '../lifecycle/resume.js';
import { getEgressLog } from './egress-log.js';
import { getEgressPolicy, toEgressPolicyInfo } from './get-egress.js';
import { setEgressPolicy } from './set-egress.js';

let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld();
});
afterEach(async () => {
  await w.dispose();
});

const rulesOf = async (id: string): Promise<string[]> => (await getEgressPolicy(w.core, id)).rules;

describe('egress on create (fake runtime)', () => {
  test('the rules are normalised, stored and enforced on the slot before the image is restored', async () => {
    const upAtApply: boolean[] = [];
    const apply = w.egress.apply.bind(w.egress);
    w.egress.apply = async (sandboxId, slot, policy) => {
      upAtApply.push(w.runtime.instances.has(sandboxId));
      return apply(sandboxId, slot, policy);
    };
    const sbx = await createSandbox(w.core, { egress: ['PyPI.org.', '*.GitHubUserContent.com:443', '10.0.0.0/8'] });
    assert.deepEqual(await rulesOf(sbx.id), ['pypi.org', '*.githubusercontent.com:443', '10.0.0.0/8']);
    assert.deepEqual(w.egress.inForce.get(sbx.slot ?? -1), { sandboxId: sbx.id, mode: 'allowlist', rules: ['pypi.org', '*.githubusercontent.com:443', '10.0.0.0/8'] });
    assert.deepEqual(upAtApply, [false], 'applied once, before the sandbox ran');
    const info = toEgressPolicyInfo(await getEgressPolicy(w.core, sbx.id));
    assert.equal(info.mode, 'allowlist');
    assert.equal(info.updatedAt, new Date(w.clock.now()).toISOString());
  });

  test('without egress the sandbox is open: nothing stored, the open policy enforced on its slot', async () => {
    const sbx = await createSandbox(w.core, {});
    assert.deepEqual(toEgressPolicyInfo(await getEgressPolicy(w.core, sbx.id)), { rules: [], mode: 'open', updatedAt: null });
    assert.deepEqual(w.egress.inForce.get(sbx.slot ?? -1)?.rules, []);
  });

  test("egress { mode: 'deny-all' } is stored and enforced as deny-all before the image is restored", async () => {
    const sbx = await createSandbox(w.core, { egress: { mode: 'deny-all' } });
    assert.deepEqual(toEgressPolicyInfo(await getEgressPolicy(w.core, sbx.id)), { rules: [], mode: 'deny-all', updatedAt: new Date(w.clock.now()).toISOString() });
    assert.deepEqual(w.egress.inForce.get(sbx.slot ?? -1), { sandboxId: sbx.id, mode: 'deny-all', rules: [] });
    const applied = w.egress.calls.indexOf(`apply ${sbx.slot} ${sbx.id} (deny-all)`);
    assert.ok(applied >= 0 && w.runtime.calls.includes(`restore ${sbx.id}`), JSON.stringify(w.egress.calls));
  });

  test('a bad rule fails the create before anything starts, naming the rule', async () => {
    await assert.rejects(createSandbox(w.core, { egress: ['pypi.org', 'foo.*.com'] }), (err: unknown) => {
      assert.ok(err instanceof RamifyError);
      assert.equal(err.code, 'VALIDATION_FAILED');
      assert.match(err.message, /^egress rule 2 'foo\.\*\.com': /);
      return true;
    });
    assert.equal((await listSandboxes(w.core, parseListQuery({ state: 'creating,running,error' }))).sandboxes.length, 0);
    assert.deepEqual(w.runtime.calls, []);
    assert.deepEqual(w.egress.calls, []);
  });

  test('an enforcer failure at create fails the create; the sandbox ends in error and gives its slot back', async () => {
    w.egress.failNextApply = new Error('nft: table busy');
    await assert.rejects(createSandbox(w.core, { egress: ['pypi.org'] }), /nft: table busy/);
    const [info] = (await listSandboxes(w.core, parseListQuery({ state: 'error' }))).sandboxes;
    const failed = await w.store.getSandbox(info.id);
    assert.equal(failed?.state, 'error');
    assert.equal(failed?.slot, null);
    assert.deepEqual(w.runtime.calls.filter((c) => c.startsWith('restore')), []);
  });
});

describe('setEgressPolicy (fake runtime)', () => {
  test('replaces the policy of a running sandbox live: stored, enforced, no restart', async () => {
    const sbx = await createSandbox(w.core, { egress: ['pypi.org'] });
    const runtimeCalls = w.runtime.calls.length;
    w.clock.advance(5_000);
    const stored = await setEgressPolicy(w.core, sbx.id, ['Example.COM:443', '192.0.2.0/24', 'example.com:443']);
    assert.deepEqual(stored.rules, ['example.com:443', '192.0.2.0/24']);
    assert.equal(stored.updatedAt, w.clock.now());
    assert.deepEqual(w.egress.rulesOf(sbx.id), ['example.com:443', '192.0.2.0/24']);
    assert.equal(w.runtime.calls.length, runtimeCalls, 'no runtime call: no restart');
    assert.deepEqual(await rulesOf(sbx.id), ['example.com:443', '192.0.2.0/24']);

    await setEgressPolicy(w.core, sbx.id, []);
    assert.deepEqual(toEgressPolicyInfo(await getEgressPolicy(w.core, sbx.id)).mode, 'open');
    assert.deepEqual(w.egress.rulesOf(sbx.id), []);
  });

  test('deny-all is set live like any policy, survives pause/resume and fork, and { rules: [] } opens it again', async () => {
    const sbx = await createSandbox(w.core, { egress: ['pypi.org'] });
    const stored = await setEgressPolicy(w.core, sbx.id, { mode: 'deny-all' });
    assert.deepEqual([stored.mode, stored.rules], ['deny-all', []]);
    assert.equal(w.egress.modeOf(sbx.id), 'deny-all');
    assert.deepEqual(w.egress.rulesOf(sbx.id), []);
    await pauseSandbox(w.core, sbx.id);
    await resumeSandbox(w.core, sbx.id, {});
    assert.equal(w.egress.calls.at(-1), `apply ${sbx.slot} ${sbx.id} (deny-all)`);
    const [child] = await forkSandbox(w.core, sbx.id, { count: 1 });
    assert.equal(toEgressPolicyInfo(await getEgressPolicy(w.core, child.id)).mode, 'deny-all');
    assert.equal(w.egress.modeOf(child.id), 'deny-all');
    await setEgressPolicy(w.core, sbx.id, { rules: [] });
    assert.equal(w.egress.modeOf(sbx.id), 'open');
    await setEgressPolicy(w.core, sbx.id, { mode: 'allowlist', rules: ['example.com'] });
    assert.deepEqual(await rulesOf(sbx.id), ['example.com']);
    await assert.rejects(setEgressPolicy(w.core, sbx.id, { mode: 'deny-all', rules: ['pypi.org'] }), { code: 'VALIDATION_FAILED' });
    assert.equal(w.egress.modeOf(sbx.id), 'allowlist', 'a refused policy changes nothing');
  });

  test('applies live to a paused sandbox (no restore); resume enforces it again before the sandbox runs', async () => {
    const sbx = await createSandbox(w.core, {});
    await pauseSandbox(w.core, sbx.id);
    const restores = w.runtime.calls.filter((c) => c.startsWith('restore')).length;
    await setEgressPolicy(w.core, sbx.id, ['pypi.org:443']);
    assert.equal(w.runtime.calls.filter((c) => c.startsWith('restore')).length, restores);
    assert.deepEqual(w.egress.rulesOf(sbx.id), ['pypi.org:443']);
    await resumeSandbox(w.core, sbx.id, {});
    assert.equal(w.egress.calls.at(-1), `apply ${sbx.slot} ${sbx.id} pypi.org:443`);
    assert.deepEqual(await rulesOf(sbx.id), ['pypi.org:443']);
  });

  test('bad input is refused naming the rule; the policy in force is unchanged (store and enforcer)', async () => {
    const sbx = await createSandbox(w.core, { egress: ['pypi.org'] });
    const calls = w.egress.calls.length;
    const bad: Array<[string[], RegExp]> = [
      [['ok.example.com', '*.com'], /^egress rule 2 '\*\.com': a wildcard cannot cover a public suffix/],
      [['example.com:0'], /^egress rule 1 'example\.com:0': port 0 is outside 1-65535/],
      [['10.0.0.0/33'], /^egress rule 1 '10\.0\.0\.0\/33'/],
      [Array.from({ length: 10_000 }, (_, i) => `h${i}.example.com`), /^egress rule 1001 'h1000\.example\.com': too many rules/],
    ];
    for (const [rules, message] of bad) {
      await assert.rejects(setEgressPolicy(w.core, sbx.id, rules), (err: unknown) => err instanceof RamifyError && err.code === 'VALIDATION_FAILED' && message.test(err.message));
    }
    assert.deepEqual(await rulesOf(sbx.id), ['pypi.org']);
    assert.equal(w.egress.calls.length, calls, 'the enforcer was never asked');
    assert.deepEqual(w.egress.rulesOf(sbx.id), ['pypi.org']);
  });

  test('when enforcing fails the stored policy is rolled back and the error surfaces', async () => {
    const sbx = await createSandbox(w.core, { egress: ['pypi.org'] });
    const before = await getEgressPolicy(w.core, sbx.id);
    w.clock.advance(1_000);
    w.egress.failNextApply = new Error('nft: No such file or directory');
    await assert.rejects(setEgressPolicy(w.core, sbx.id, ['example.com']), (err: unknown) => {
      assert.ok(err instanceof RamifyError);
      assert.equal(err.code, 'RUNTIME_ERROR');
      assert.match(err.message, /\(the previous policy stays in force\): nft: No such file or directory/);
      return true;
    });
    assert.deepEqual(await getEgressPolicy(w.core, sbx.id), before);
    assert.deepEqual(w.egress.rulesOf(sbx.id), ['pypi.org']);

    // A sandbox whose policy was never set goes back to "never set"; a RamifyError keeps its code.
    const open = await createSandbox(w.core, {});
    w.egress.failNextApply = new RamifyError('RUNTIME_UNAVAILABLE', 'egress enforcement is down');
    await assert.rejects(setEgressPolicy(w.core, open.id, ['example.com']), { code: 'RUNTIME_UNAVAILABLE' });
    assert.deepEqual(toEgressPolicyInfo(await getEgressPolicy(w.core, open.id)), { rules: [], mode: 'open', updatedAt: null });
  });

  test('killed and unknown sandboxes are SANDBOX_NOT_FOUND; kill drops the slot\'s enforcement', async () => {
    const sbx = await createSandbox(w.core, { egress: ['pypi.org'] });
    await killSandbox(w.core, sbx.id);
    assert.ok(w.egress.calls.includes(`remove ${sbx.slot}`));
    assert.equal(w.egress.rulesOf(sbx.id), undefined);
    for (const id of [sbx.id, 'sbx_missing']) {
      await assert.rejects(setEgressPolicy(w.core, id, ['pypi.org']), { code: 'SANDBOX_NOT_FOUND' });
      await assert.rejects(getEgressPolicy(w.core, id), { code: 'SANDBOX_NOT_FOUND' });
      await assert.rejects(getEgressLog(w.core, id), { code: 'SANDBOX_NOT_FOUND' });
    }
  });

  test('a sandbox in error cannot take a new policy (INVALID_STATE)', async () => {
    const sbx = await createSandbox(w.core, {});
    await w.store.updateSandbox(sbx.id, { state: 'error', error: 'broken' });
    await assert.rejects(setEgressPolicy(w.core, sbx.id, ['pypi.org']), { code: 'INVALID_STATE' });
  });

  test('the egress log is empty until the enforcement side records verdicts', async () => {
    const sbx = await createSandbox(w.core, { egress: ['pypi.org'] });
    assert.deepEqual(await getEgressLog(w.core, sbx.id, { limit: 10 }), []);
  });
});

describe('egress and fork (fake runtime)', () => {
  for (const parentState of ['running', 'paused'] as const) {
    test(`children of a ${parentState} parent get independent copies of its policy, enforced on their own slots`, async () => {
      const parent = await createSandbox(w.core, { egress: ['pypi.org', '10.0.0.0/8:22'] });
      if (parentState === 'paused') await pauseSandbox(w.core, parent.id);
      const children = await forkSandbox(w.core, parent.id, { count: 2 });
      for (const child of children) {
        assert.deepEqual(await rulesOf(child.id), ['pypi.org', '10.0.0.0/8:22']);
        assert.deepEqual(w.egress.inForce.get(child.slot ?? -1), { sandboxId: child.id, mode: 'allowlist', rules: ['pypi.org', '10.0.0.0/8:22'] });
      }
      await setEgressPolicy(w.core, children[0].id, ['example.com']);
      assert.deepEqual(await rulesOf(parent.id), ['pypi.org', '10.0.0.0/8:22']);
      assert.deepEqual(await rulesOf(children[1].id), ['pypi.org', '10.0.0.0/8:22']);
      await setEgressPolicy(w.core, parent.id, []);
      assert.deepEqual(await rulesOf(children[0].id), ['example.com']);
      assert.deepEqual(await rulesOf(children[1].id), ['pypi.org', '10.0.0.0/8:22']);
      assert.deepEqual(w.egress.rulesOf(children[1].id), ['pypi.org', '10.0.0.0/8:22']);
      assert.deepEqual(w.egress.rulesOf(parent.id), []);
    });
  }

  test('a parent that never set a policy has open children', async () => {
    const parent = await createSandbox(w.core, {});
    const [child] = await forkSandbox(w.core, parent.id, { count: 1 });
    assert.deepEqual(toEgressPolicyInfo(await getEgressPolicy(w.core, child.id)), { rules: [], mode: 'open', updatedAt: null });
  });
});

describe('egress after a daemon restart (fake runtime)', () => {
  test('reconcile enforces the stored policy of every running and paused sandbox again', async () => {
    const running = await createSandbox(w.core, { egress: ['pypi.org'] });
    const denied = await createSandbox(w.core, { egress: { mode: 'deny-all' } });
    const paused = await createSandbox(w.core, { egress: ['192.0.2.1:443'] });
    await pauseSandbox(w.core, paused.id);
    const killed = await createSandbox(w.core, { egress: ['example.com'] });
    await killSandbox(w.core, killed.id);
    await w.close();
    w.egress.inForce.clear(); // a host reboot: nothing enforced any more
    w = await createTestWorld({}, w);
    await reconcile(w.core);
    assert.deepEqual(w.egress.rulesOf(running.id), ['pypi.org']);
    assert.deepEqual(w.egress.rulesOf(paused.id), ['192.0.2.1:443']);
    assert.equal(w.egress.modeOf(denied.id), 'deny-all');
    assert.equal(w.egress.rulesOf(killed.id), undefined);
  });
});
