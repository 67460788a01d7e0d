/**
 * Use-case tests of the warm pool (FAKE runtime and agent; real SQLite store): what it holds and
 * where (no store row, egress denied), what a claim changes (policy, identity, lifetime, team), quota
 * at claim, misses, draining after a rebuild, auto sizing by use, and close. The real runtime's side
 * (isolation, entropy, restarts) is covered by daemon/src/real-pool*.test.ts.
 */
import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cp } from 'node:fs/promises';
import { RamifyError } from '@ramify/contracts';
import type { Actor } from '../access/actor.js';
import type { CoreOptions } from '../context.js';
import { createSandbox } from '../lifecycle/create.js';
import { killSandbox } from '../lifecycle/kill.js';
import { createTeam, setTeamQuota } from '../teams/teams.js';
import { createTestWorld, lastGuestEnvs, type TestWorld } from '../testing/world.js';
import { parseWarmPoolSpec } from '@ramify/contracts';

let w: TestWorld | undefined;
afterEach(async () => {
  await w?.core.pool.close();
  await w?.dispose();
  w = undefined;
});

async function world(options: Partial<CoreOptions>): Promise<TestWorld> {
  w = await createTestWorld({ warmPoolQuietMs: 0, ...options });
  await w.core.pool.start();
  await w.core.pool.filled();
  return w;
}

const pooledIds = (t: TestWorld): string[] => [...t.runtime.instances.keys()];

describe('warm pool', () => {
  test('holds restored sandboxes with no store row and egress denied; a create claims one with its own policy, identity and lifetime', async () => {
    const t = await world({ warmPool: parseWarmPoolSpec('base=2') });
    assert.equal(t.core.pool.stats().idle, 2);
    assert.deepEqual((await t.store.listSandboxes({})).sandboxes, [], 'pooled sandboxes have no row: no listing, quota or metering sees them');
    const [first] = pooledIds(t);
    assert.equal(t.egress.modeOf(first!), 'deny-all', 'idle in the pool: nothing leaves');

    t.clock.advance(60_000);
    const sbx = await createSandbox(t.core, { envs: { WHO: 'me' }, metadata: { k: 'v' }, egress: ['allowed.test'], timeoutMs: 10_000 });
    assert.ok(pooledIds(t).includes(sbx.id), 'it is one of the pooled instances');
    assert.equal(t.core.pool.stats().hits, 1);
    assert.equal(sbx.state, 'running');
    assert.equal(sbx.createdAt, t.clock.now(), 'its life starts at the claim');
    assert.equal(sbx.endAt, t.clock.now() + 10_000);
    assert.deepEqual(sbx.metadata, { k: 'v' });
    assert.equal(t.egress.modeOf(sbx.id), 'allowlist', "the request's policy replaced the pool's");
    assert.deepEqual(t.egress.rulesOf(sbx.id), ['allowed.test']);
    assert.deepEqual(lastGuestEnvs(t, sbx.id), { WHO: 'me' }, 'the agent was told its envs at the claim');
    assert.equal(t.runtime.guest(sbx.id).identities.at(-1)?.clockMs, t.clock.now(), 'and the clock of the claim');
    assert.equal((await t.store.listSandboxes({})).sandboxes.length, 1);

    await t.core.pool.filled();
    assert.equal(t.core.pool.stats().idle, 2, 'refilled in the background');
    await killSandbox(t.core, sbx.id);
  });

  test('quota is checked at the claim: a refused create leaves the pooled sandbox idle', async () => {
    const t = await world({ warmPool: parseWarmPoolSpec('base=1') });
    const operator: Actor = { keyId: 'key_op', teamId: 'default', role: 'admin' };
    await createTeam(t.core, operator, { id: 'acme' });
    await setTeamQuota(t.core, operator, 'acme', { maxRunning: 0 });
    await assert.rejects(createSandbox(t.core, {}, { teamId: 'acme' }), (err: unknown) => err instanceof RamifyError && err.code === 'QUOTA_EXCEEDED');
    assert.equal(t.core.pool.stats().idle, 1);
    assert.equal(t.core.pool.stats().hits, 0);
    const sbx = await createSandbox(t.core, {}, { teamId: 'default' });
    assert.equal(t.core.pool.stats().hits, 1, 'the same sandbox serves the next create');
    assert.equal(sbx.teamId, 'default');
  });

  test('misses: other resources, an empty pool; a snapshot create never counts', async () => {
    const t = await world({ warmPool: parseWarmPoolSpec('base=1') });
    const odd = await createSandbox(t.core, { memoryMB: 700 });
    assert.equal(odd.memoryMB, 700);
    assert.deepEqual(t.core.pool.stats().misses, { empty: 0, resources: 1 });
    const [a, b] = await Promise.all([createSandbox(t.core, {}), createSandbox(t.core, {})]);
    assert.notEqual(a.id, b.id);
    const stats = t.core.pool.stats();
    assert.equal(stats.hits, 1);
    assert.deepEqual(stats.misses, { empty: 1, resources: 1 });
  });

  test('a rebuild that replaces the image drains its pooled sandboxes; the pool refills from the new image', async () => {
    const t = await world({ warmPool: parseWarmPoolSpec('base=1') });
    const [old] = pooledIds(t);
    const template = (await t.store.findTemplateByName('base', 'default'))!;
    const { imageDir } = await t.storage.prepare('snap_tpl_v2');
    await cp((await t.storage.open('snap_tpl')).imageDir, imageDir, { recursive: true });
    await t.storage.commit({ snapshotId: 'snap_tpl_v2', runtime: 'gvisor', templateId: 'tpl_base', parentSnapshotId: null });
    await t.store.insertSnapshot({ ...(await t.store.getSnapshot('snap_tpl'))!, id: 'snap_tpl_v2' });
    await t.store.putTemplate({ ...template, snapshotId: 'snap_tpl_v2', images: [{ runtime: 'gvisor', snapshotId: 'snap_tpl_v2' }] });
    await t.core.pool.drain();
    assert.ok(!t.runtime.instances.has(old!), 'the sandbox of the replaced image is gone');
    await t.core.pool.filled();
    const sbx = await createSandbox(t.core, {});
    assert.equal(sbx.sourceSnapshotId, 'snap_tpl_v2');
    assert.equal(t.core.pool.stats().hits, 1);
  });

  test('auto: a template is pooled once a create used it; close kills every pooled sandbox and frees its slot', async () => {
    const t = await world({ warmPool: { mode: 'auto' } });
    assert.equal(t.core.pool.stats().idle, 0, 'nothing used yet');
    const first = await createSandbox(t.core, {});
    assert.deepEqual(t.core.pool.stats().misses, { empty: 1, resources: 0 });
    await t.core.pool.filled();
    assert.equal(t.core.pool.stats().idle, 1);
    assert.equal(t.core.pool.stats().templates[0]?.template, 'base');
    await t.core.pool.close();
    assert.deepEqual(pooledIds(t), [first.id], 'only the created sandbox runs');
    assert.deepEqual((await t.store.listSlots('host-test')).map((l) => l.sandboxId), [first.id], 'the pooled slot is free');
  });

  test('a pooled sandbox that stopped while idle is never handed out: released, and the create gets another or restores', async () => {
    const t = await world({ warmPool: parseWarmPoolSpec('base=1') });
    const [dead] = pooledIds(t);
    t.runtime.die(dead!, 'killed from outside');
    const sbx = await createSandbox(t.core, {});
    assert.notEqual(sbx.id, dead);
    assert.equal(sbx.state, 'running');
    assert.equal(t.core.pool.runtimeOf(dead!), undefined, 'the pool let it go');
    const stats = t.core.pool.stats();
    assert.equal(stats.hits + stats.misses.empty, 1, 'a refill (hit) or a restore (miss)');
  });

  test('the memory budget caps the pool', async () => {
    const t = await world({ warmPool: parseWarmPoolSpec('base=4'), warmPoolBudgetMB: 1100 });
    assert.equal(t.core.pool.stats().idle, 2, 'two of 512 MB fit in 1100 MB');
  });
});

describe('parseWarmPoolSpec', () => {
  test('auto, off, sizes with runtimes; bad entries are refused naming them', () => {
    assert.deepEqual(parseWarmPoolSpec('auto'), { mode: 'auto' });
    assert.deepEqual(parseWarmPoolSpec('off'), { mode: 'off' });
    assert.deepEqual(parseWarmPoolSpec('base=2,python-tests=1,base:microvm=1'), {
      mode: 'sizes',
      sizes: [{ template: 'base', count: 2 }, { template: 'python-tests', count: 1 }, { template: 'base', runtime: 'microvm', count: 1 }],
    });
    for (const bad of ['base', 'base=x', 'base=99', 'base:qemu=1', '=2']) {
      assert.throws(() => parseWarmPoolSpec(bad), (err: unknown) => err instanceof RamifyError && err.code === 'VALIDATION_FAILED' && err.message.includes(bad));
    }
  });
});
