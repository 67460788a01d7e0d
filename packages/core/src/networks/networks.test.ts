/**
 * Use-case tests of private networks with FAKE runtime, network, agent and enforcers (core logic only:
 * what is stored, what core asks the network enforcer to enforce and when) and a real SQLite store.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_TEAM, MAX_NETWORKS_PER_SANDBOX } from '@ramify/contracts';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from '../lifecycle/create.js';
import { forkSandbox } from '../lifecycle/fork.js';
import { killSandbox } from '../lifecycle/kill.js';
import { listSandboxes } from '../lifecycle/list.js';
import { pauseSandbox } from '../lifecycle/pause.js';
import { reconcile } from '../lifecycle/reconcile.js';
import { resumeSandbox } from '../lifecycle/resume.js';
import { snapshotSandbox } from '../lifecycle/snapshot.js';
import { toSnapshotInfo } from '../lifecycle/records.js';
import { attachNetwork, detachNetwork, listSandboxNetworks, toSandboxNetworkInfo } from './attach.js';
import { createNetwork, deleteNetwork, getNetwork, listNetworks, toNetworkInfo } from './networks.js';
import { defaultAlias, forkAliases } from './names.js';
import type { Actor } from '../access/actor.js';
import { createTeam } from '../teams/teams.js';

let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld();
});
afterEach(async () => {
  await w.dispose();
});

const aliasesOn = async (network: string): Promise<string[]> => (await getNetwork(w.core, DEFAULT_TEAM, network)).members.map((m) => m.alias);
const liveCount = async (): Promise<number> => (await listSandboxes(w.core, {})).sandboxes.length;

describe('networks as a resource', () => {
  test('create, get by name or id, list, delete; the name must be a DNS label; duplicates are NETWORK_EXISTS; nothing stored on refusal', async () => {
    const n1 = await createNetwork(w.core, DEFAULT_TEAM, { name: 'n1' });
    assert.match(n1.id, /^net_/);
    assert.equal((await getNetwork(w.core, DEFAULT_TEAM, n1.id)).name, 'n1');
    for (const bad of ['', 'N1', '-a', 'a-', 'a_b', 'a.b', 'x'.repeat(64), 'ä']) {
      await assert.rejects(createNetwork(w.core, DEFAULT_TEAM, { name: bad }), (err: { code?: string; details?: { field?: string } }) => err.code === 'VALIDATION_FAILED' && err.details?.field === 'name', bad);
    }
    await assert.rejects(createNetwork(w.core, DEFAULT_TEAM, { name: 'n1' }), { code: 'NETWORK_EXISTS' });
    assert.ok((await createNetwork(w.core, DEFAULT_TEAM, { name: 'x'.repeat(63) })).name.length === 63);
    assert.deepEqual((await listNetworks(w.core, DEFAULT_TEAM)).map((n) => n.name), ['n1', 'x'.repeat(63)]);
    await deleteNetwork(w.core, DEFAULT_TEAM, 'n1');
    await assert.rejects(getNetwork(w.core, DEFAULT_TEAM, 'n1'), { code: 'NETWORK_NOT_FOUND' });
    await assert.rejects(deleteNetwork(w.core, DEFAULT_TEAM, 'n1'), { code: 'NETWORK_NOT_FOUND' });
  });

  test("networks belong to a team: names are unique per team, another team's network is NETWORK_NOT_FOUND by name and id, to join too", async () => {
    const operator: Actor = { keyId: 'key_op', teamId: DEFAULT_TEAM, role: 'admin' };
    await createTeam(w.core, operator, { id: 'acme' });
    const ours = await createNetwork(w.core, DEFAULT_TEAM, { name: 'n1' });
    const theirs = await createNetwork(w.core, 'acme', { name: 'n1' });
    assert.notEqual(theirs.id, ours.id);
    assert.deepEqual((await listNetworks(w.core, 'acme')).map((n) => n.id), [theirs.id]);
    for (const ref of ['n1', ours.id]) assert.equal((await getNetwork(w.core, DEFAULT_TEAM, ref)).id, ours.id);
    await assert.rejects(getNetwork(w.core, 'acme', ours.id), { code: 'NETWORK_NOT_FOUND' });
    await assert.rejects(deleteNetwork(w.core, 'acme', ours.id), { code: 'NETWORK_NOT_FOUND' });
    const acmeSandbox = await createSandbox(w.core, {}, { teamId: 'acme' });
    await assert.rejects(attachNetwork(w.core, acmeSandbox.id, { network: ours.id }), { code: 'NETWORK_NOT_FOUND' });
    await assert.rejects(createSandbox(w.core, { networks: [{ network: ours.id }] }, { teamId: 'acme' }), { code: 'NETWORK_NOT_FOUND' });
    assert.equal((await attachNetwork(w.core, acmeSandbox.id, { network: 'n1' })).networkId, theirs.id, "'n1' is acme's own");
    assert.deepEqual((await getNetwork(w.core, DEFAULT_TEAM, 'n1')).members, [], 'nothing joined ours');
  });

  test('deleting a network in use is NETWORK_IN_USE naming its sandboxes; once they are killed it goes', async () => {
    await createNetwork(w.core, DEFAULT_TEAM, { name: 'n1' });
    const a = await createSandbox(w.core, { networks: [{ network: 'n1' }] });
    const b = await createSandbox(w.core, { networks: [{ network: 'n1', alias: 'bee' }] });
    await assert.rejects(deleteNetwork(w.core, DEFAULT_TEAM, 'n1'), (err: { code?: string; message?: string; details?: { sandboxes?: string[] } }) => {
      assert.equal(err.code, 'NETWORK_IN_USE');
      assert.deepEqual(new Set(err.details?.sandboxes), new Set([a.id, b.id]));
      assert.ok(err.message?.includes(a.id) && err.message.includes(b.id), err.message);
      return true;
    });
    assert.deepEqual(await aliasesOn('n1'), ['bee', defaultAlias(a.id)].sort(), 'nothing changed');
    await killSandbox(w.core, a.id);
    await detachNetwork(w.core, b.id, 'n1');
    await deleteNetwork(w.core, DEFAULT_TEAM, 'n1');
    assert.deepEqual(await listNetworks(w.core, DEFAULT_TEAM), []);
  });
});

describe('joining at create', () => {
  test('the networks are stored and enforced before the image is restored; the default alias is sbx-<last 8 of the id>', async () => {
    await createNetwork(w.core, DEFAULT_TEAM, { name: 'n1' });
    await createNetwork(w.core, DEFAULT_TEAM, { name: 'n2' });
    const upAtApply: boolean[] = [];
    const apply = w.networks.apply.bind(w.networks);
    w.networks.apply = async (sandboxId, slot, memberships) => {
      upAtApply.push(w.runtime.instances.has(sandboxId));
      return apply(sandboxId, slot, memberships);
    };
    const sbx = await createSandbox(w.core, { networks: [{ network: 'n1' }, { network: 'n2', alias: 'worker' }] });
    const alias = defaultAlias(sbx.id);
    assert.match(alias, /^sbx-[0-9a-z]{8}$/);
    assert.deepEqual(w.networks.inForce.get(sbx.slot ?? -1), { sandboxId: sbx.id, networks: [`n1:${alias}`, 'n2:worker'] });
    assert.deepEqual(upAtApply, [false], 'applied once, before the sandbox ran');
    const egressAt = w.egress.calls.findIndex((c) => c.startsWith(`apply ${sbx.slot} ${sbx.id}`));
    assert.ok(egressAt >= 0, 'egress enforced too');
    assert.deepEqual((await listSandboxNetworks(w.core, sbx.id)).map(toSandboxNetworkInfo).map((n) => [n.network, n.alias, n.hostname]), [
      ['n1', alias, `${alias}.n1.internal`], ['n2', 'worker', 'worker.n2.internal'],
    ]);
  });

  test('an unknown network, a taken alias, a bad alias or a network given twice fail the create before anything starts', async () => {
    await createNetwork(w.core, DEFAULT_TEAM, { name: 'n1' });
    await createSandbox(w.core, { networks: [{ network: 'n1', alias: 'taken' }] });
    const before = await liveCount();
    const restores = w.runtime.calls.filter((c) => c.startsWith('restore')).length;
    await assert.rejects(createSandbox(w.core, { networks: [{ network: 'nope' }] }), { code: 'NETWORK_NOT_FOUND' });
    await assert.rejects(createSandbox(w.core, { networks: [{ network: 'n1', alias: 'taken' }] }), { code: 'NETWORK_ALIAS_TAKEN' });
    await assert.rejects(createSandbox(w.core, { networks: [{ network: 'n1', alias: 'Bad_Alias' }] }), { code: 'VALIDATION_FAILED' });
    await assert.rejects(createSandbox(w.core, { networks: [{ network: 'n1' }, { network: 'n1', alias: 'other' }] }), { code: 'VALIDATION_FAILED' });
    assert.equal(await liveCount(), before, 'no sandbox was left behind');
    assert.equal(w.runtime.calls.filter((c) => c.startsWith('restore')).length, restores, 'nothing was restored');
    assert.deepEqual(await aliasesOn('n1'), ['taken']);
  });

  test('more networks than a sandbox may be on: VALIDATION_FAILED at body.networks (create) or body.network (attach)', async () => {
    const names = Array.from({ length: MAX_NETWORKS_PER_SANDBOX + 1 }, (_, i) => `m${i}`);
    for (const name of names) await createNetwork(w.core, DEFAULT_TEAM, { name });
    const most = `must be an array of at most ${MAX_NETWORKS_PER_SANDBOX} networks (the most a sandbox may be on), got ${names.length}`;
    await assert.rejects(createSandbox(w.core, { networks: names.map((network) => ({ network })) }), {
      code: 'VALIDATION_FAILED', message: `body.networks: ${most}`, details: { field: 'networks', issues: [{ path: 'body.networks', message: most }] },
    });
    const sbx = await createSandbox(w.core, { networks: names.slice(0, MAX_NETWORKS_PER_SANDBOX).map((network) => ({ network })) });
    const full = `cannot be joined: sandbox '${sbx.id}' is on ${MAX_NETWORKS_PER_SANDBOX} networks, the most (${MAX_NETWORKS_PER_SANDBOX}) a sandbox may be on; detach one first`;
    await assert.rejects(attachNetwork(w.core, sbx.id, { network: names[MAX_NETWORKS_PER_SANDBOX]! }), {
      code: 'VALIDATION_FAILED', message: `body.network: ${full}`, details: { field: 'network', issues: [{ path: 'body.network', message: full }] },
    });
  });

  test('without a network enforcer (egress enforcement off) joining is RUNTIME_UNAVAILABLE; networks can still be created', async () => {
    const bare = await createTestWorld();
    try {
      const core = { ...bare.core, networkEnforcer: undefined };
      await createNetwork(core, DEFAULT_TEAM, { name: 'n1' });
      await assert.rejects(createSandbox(core, { networks: [{ network: 'n1' }] }), { code: 'RUNTIME_UNAVAILABLE' });
      const sbx = await createSandbox(core, {});
      await assert.rejects(attachNetwork(core, sbx.id, { network: 'n1' }), { code: 'RUNTIME_UNAVAILABLE' });
    } finally {
      await bare.dispose();
    }
  });
});

describe('live attach and detach', () => {
  test('attach applies at once (running and paused); same again is a no-op; detach applies and is idempotent', async () => {
    await createNetwork(w.core, DEFAULT_TEAM, { name: 'n1' });
    const sbx = await createSandbox(w.core, {});
    assert.deepEqual(w.networks.networksOf(sbx.id), []);
    const m = await attachNetwork(w.core, sbx.id, { network: 'n1', alias: 'alpha' });
    assert.deepEqual([m.network, m.alias], ['n1', 'alpha']);
    assert.deepEqual(w.networks.networksOf(sbx.id), ['n1:alpha']);
    const calls = w.networks.calls.length;
    assert.equal((await attachNetwork(w.core, sbx.id, { network: 'n1' })).alias, 'alpha');
    assert.equal(w.networks.calls.length, calls, 'a repeated attach changes nothing');
    await assert.rejects(attachNetwork(w.core, sbx.id, { network: 'n1', alias: 'beta' }), { code: 'CONFLICT' });
    await detachNetwork(w.core, sbx.id, 'n1');
    assert.deepEqual(w.networks.networksOf(sbx.id), []);
    await detachNetwork(w.core, sbx.id, 'n1');
    await pauseSandbox(w.core, sbx.id);
    await attachNetwork(w.core, sbx.id, { network: 'n1', alias: 'alpha' });
    assert.deepEqual(w.networks.networksOf(sbx.id), ['n1:alpha'], 'a paused sandbox joins live too');
  });

  test('bad input changes nothing: unknown network, taken alias, bad alias, killed sandbox', async () => {
    await createNetwork(w.core, DEFAULT_TEAM, { name: 'n1' });
    const a = await createSandbox(w.core, { networks: [{ network: 'n1', alias: 'a' }] });
    const b = await createSandbox(w.core, {});
    const calls = w.networks.calls.length;
    await assert.rejects(attachNetwork(w.core, b.id, { network: 'n9' }), { code: 'NETWORK_NOT_FOUND' });
    await assert.rejects(attachNetwork(w.core, b.id, { network: 'n1', alias: 'a' }), (err: { code?: string; details?: { sandboxId?: string } }) => err.code === 'NETWORK_ALIAS_TAKEN' && err.details?.sandboxId === a.id);
    await assert.rejects(attachNetwork(w.core, b.id, { network: 'n1', alias: '-x' }), { code: 'VALIDATION_FAILED' });
    assert.equal(w.networks.calls.length, calls, 'the enforcer was not called');
    assert.deepEqual(await aliasesOn('n1'), ['a']);
    await killSandbox(w.core, b.id);
    await assert.rejects(attachNetwork(w.core, b.id, { network: 'n1' }), { code: 'SANDBOX_NOT_FOUND' });
  });

  test('when enforcing fails, the membership is not stored (attach) or stays stored (detach)', async () => {
    await createNetwork(w.core, DEFAULT_TEAM, { name: 'n1' });
    const sbx = await createSandbox(w.core, {});
    w.networks.failNextApply = new Error('nft said no');
    await assert.rejects(attachNetwork(w.core, sbx.id, { network: 'n1' }), /nft said no/);
    assert.deepEqual(await aliasesOn('n1'), []);
    await attachNetwork(w.core, sbx.id, { network: 'n1', alias: 'x' });
    w.networks.failNextApply = new Error('nft said no');
    await assert.rejects(detachNetwork(w.core, sbx.id, 'n1'), /nft said no/);
    assert.deepEqual(await aliasesOn('n1'), ['x']);
    assert.deepEqual(w.networks.networksOf(sbx.id), ['n1:x']);
  });

  test('kill releases the slot from the enforcer and drops the membership', async () => {
    await createNetwork(w.core, DEFAULT_TEAM, { name: 'n1' });
    const sbx = await createSandbox(w.core, { networks: [{ network: 'n1' }] });
    const slot = sbx.slot;
    await killSandbox(w.core, sbx.id);
    assert.ok(w.networks.calls.includes(`remove ${slot}`));
    assert.equal(w.networks.inForce.has(slot ?? -1), false);
    assert.deepEqual(toNetworkInfo(await getNetwork(w.core, DEFAULT_TEAM, 'n1')).members, []);
  });
});

describe('lifecycle', () => {
  test('pause/resume keeps the membership and re-applies it before the restore; a daemon restart re-applies every one', async () => {
    await createNetwork(w.core, DEFAULT_TEAM, { name: 'n1' });
    const sbx = await createSandbox(w.core, { networks: [{ network: 'n1', alias: 'a' }] });
    await pauseSandbox(w.core, sbx.id);
    assert.deepEqual(w.networks.networksOf(sbx.id), ['n1:a'], 'in force while paused (the slot is kept)');
    w.networks.calls.length = 0;
    await resumeSandbox(w.core, sbx.id);
    assert.deepEqual(w.networks.calls, [`apply ${sbx.slot} ${sbx.id} n1:a`]);
    w.networks.inForce.clear();
    const restarted = await createTestWorld({}, w);
    try {
      await reconcile(restarted.core);
      assert.deepEqual(w.networks.networksOf(sbx.id), ['n1:a']);
    } finally {
      await restarted.close();
    }
  });

  test('forks join the parent\'s networks as <alias>-<n>, distinct across forks; networks: false joins none', async () => {
    await createNetwork(w.core, DEFAULT_TEAM, { name: 'n1' });
    await createNetwork(w.core, DEFAULT_TEAM, { name: 'n2' });
    const parent = await createSandbox(w.core, { networks: [{ network: 'n1', alias: 'a' }, { network: 'n2', alias: 'p' }] });
    const kids = await forkSandbox(w.core, parent.id, { count: 3 });
    const aliases = await Promise.all(kids.map(async (k) => (await listSandboxNetworks(w.core, k.id)).map((m) => `${m.network}:${m.alias}`)));
    assert.deepEqual(aliases, [['n1:a-1', 'n2:p-1'], ['n1:a-2', 'n2:p-2'], ['n1:a-3', 'n2:p-3']]);
    for (const [i, k] of kids.entries()) assert.deepEqual(w.networks.networksOf(k.id), aliases[i]);
    await killSandbox(w.core, kids[1]!.id);
    const [again] = await forkSandbox(w.core, parent.id, { count: 1 });
    assert.deepEqual((await listSandboxNetworks(w.core, again!.id)).map((m) => m.alias), ['a-2', 'p-2'], 'the lowest free number');
    const [alone] = await forkSandbox(w.core, parent.id, { count: 1, networks: false });
    assert.deepEqual(await listSandboxNetworks(w.core, alone!.id), []);
    assert.deepEqual(w.networks.networksOf(alone!.id), []);
  });

  test('a snapshot records membership; a sandbox created from it joins none', async () => {
    await createNetwork(w.core, DEFAULT_TEAM, { name: 'n1' });
    const sbx = await createSandbox(w.core, { networks: [{ network: 'n1', alias: 'a' }] });
    const snap = await snapshotSandbox(w.core, sbx.id, { name: 'with-net' });
    assert.deepEqual(toSnapshotInfo(snap).networks, [{ network: 'n1', alias: 'a' }]);
    const fromSnap = await createSandbox(w.core, { snapshot: 'with-net' });
    assert.deepEqual(await listSandboxNetworks(w.core, fromSnap.id), []);
    assert.deepEqual(w.networks.networksOf(fromSnap.id), []);
    assert.deepEqual(await aliasesOn('n1'), ['a']);
  });
});

test('forkAliases: lowest free numbers, shortened to 63 characters', () => {
  assert.deepEqual(forkAliases('a', 3, new Set(['a', 'a-2'])), ['a-1', 'a-3', 'a-4']);
  const long = 'x'.repeat(63);
  const [first] = forkAliases(long, 1, new Set());
  assert.equal(first, `${'x'.repeat(61)}-1`);
});
