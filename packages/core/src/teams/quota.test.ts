/**
 * Team quotas in core: create, fork and resume are admitted against maxRunning, maxMemoryMB and
 * maxForksPerCall under one lock per team (concurrent calls cannot both take the last room), a refused
 * call leaves nothing behind, and a failed one gives its room back. Teams are scoped: a sandbox of one
 * team is invisible to another's lookups. FAKE runtime, network and agent; a real SQLite store.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RamifyError } from '@ramify/contracts';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from '../lifecycle/create.js';
import { forkSandbox } from '../lifecycle/fork.js';
import { killSandbox } from '../lifecycle/kill.js';
import { listSandboxes } from '../lifecycle/list.js';
import { pauseSandbox } from '../lifecycle/pause.js';
import { resumeSandbox } from '../lifecycle/resume.js';
import { ownedSandbox, type Actor } from '../access/actor.js';
import { teamUsage } from './quota.js';
import { createTeam, setTeamQuota } from './teams.js';

const OPERATOR: Actor = { keyId: 'key_op', teamId: 'default', role: 'admin' };
let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld();
  await createTeam(w.core, OPERATOR, { id: 'acme' });
});
afterEach(async () => {
  await w.dispose();
});

function quotaError(limit: string): (err: unknown) => boolean {
  return (err) => {
    assert.ok(err instanceof RamifyError, String(err));
    assert.equal(err.code, 'QUOTA_EXCEEDED');
    assert.equal(err.status, 429);
    assert.equal(err.details?.limit, limit);
    assert.equal(err.details?.team, 'acme');
    assert.match(err.message, new RegExp(`quota ${limit}`));
    return true;
  };
}

const acme = { teamId: 'acme' };
const count = async (teamId: string): Promise<number> => (await w.store.listSandboxes({ teamId })).sandboxes.length;

describe('quotas', () => {
  test('maxRunning: the next create is refused and makes nothing; a paused sandbox frees its room until it resumes', async () => {
    await setTeamQuota(w.core, OPERATOR, 'acme', { maxRunning: 2 });
    const a = await createSandbox(w.core, {}, acme);
    await createSandbox(w.core, {}, acme);
    await assert.rejects(createSandbox(w.core, {}, acme), quotaError('maxRunning'));
    assert.equal(await count('acme'), 2, 'the refused create stored no sandbox');
    await createSandbox(w.core, {}, { teamId: 'default' });
    assert.equal(await count('default'), 1, "another team's room is its own");

    await pauseSandbox(w.core, a.id);
    const c = await createSandbox(w.core, {}, acme);
    await assert.rejects(resumeSandbox(w.core, a.id), quotaError('maxRunning'));
    assert.equal((await w.store.getSandbox(a.id))?.state, 'paused', 'a refused resume leaves it paused');
    await killSandbox(w.core, c.id);
    assert.equal((await resumeSandbox(w.core, a.id)).state, 'running');
    assert.deepEqual(await teamUsage(w.core, 'acme'), { running: 2, memoryMB: 1024 });
  });

  test('two concurrent creates for the last room: exactly one is admitted', async () => {
    await setTeamQuota(w.core, OPERATOR, 'acme', { maxRunning: 1 });
    const outcomes = await Promise.allSettled([createSandbox(w.core, {}, acme), createSandbox(w.core, {}, acme), createSandbox(w.core, {}, acme)]);
    assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1);
    for (const o of outcomes) if (o.status === 'rejected') quotaError('maxRunning')(o.reason);
    assert.equal(await count('acme'), 1);
  });

  test('maxMemoryMB counts the memory asked for; a failed create gives its room back', async () => {
    await setTeamQuota(w.core, OPERATOR, 'acme', { maxMemoryMB: 1024 });
    await createSandbox(w.core, { memoryMB: 768 }, acme);
    await assert.rejects(createSandbox(w.core, { memoryMB: 512 }, acme), quotaError('maxMemoryMB'));
    w.runtime.failAllRestores = true;
    await assert.rejects(createSandbox(w.core, { memoryMB: 256 }, acme), /fake restore/);
    w.runtime.failAllRestores = false;
    assert.deepEqual(await teamUsage(w.core, 'acme'), { running: 1, memoryMB: 768 }, 'the failed one (state error) holds nothing');
    await createSandbox(w.core, { memoryMB: 256 }, acme);
  });

  test('fork: maxForksPerCall and the children\'s room are checked before the parent is touched', async () => {
    const parent = await createSandbox(w.core, {}, acme);
    await setTeamQuota(w.core, OPERATOR, 'acme', { maxForksPerCall: 2, maxRunning: 3 });
    await assert.rejects(forkSandbox(w.core, parent.id, { count: 3 }), quotaError('maxForksPerCall'));
    const checkpoints = w.runtime.calls.filter((c) => c.startsWith('checkpoint')).length;
    await forkSandbox(w.core, parent.id, { count: 2 });
    assert.ok(w.runtime.calls.filter((c) => c.startsWith('checkpoint')).length > checkpoints, 'the admitted fork checkpointed the parent');
    const before = w.runtime.calls.length;
    await assert.rejects(forkSandbox(w.core, parent.id, { count: 1 }), quotaError('maxRunning'));
    assert.equal(w.runtime.calls.length, before, 'the refused fork did not call the runtime');
    assert.equal((await w.store.getSandbox(parent.id))?.state, 'running');
    const children = (await listSandboxes(w.core, { teamId: 'acme' })).sandboxes.filter((s) => s.parentId === parent.id);
    assert.equal(children.length, 2);
    assert.ok(children.every((c) => c.team === 'acme'), "children belong to the parent's team");
  });

  test('a quota must be whole numbers from 0; null lifts a limit; absent fields stay', async () => {
    await setTeamQuota(w.core, OPERATOR, 'acme', { maxRunning: 1, maxMemoryMB: 100 });
    await assert.rejects(setTeamQuota(w.core, OPERATOR, 'acme', { maxRunning: -1 }), { code: 'VALIDATION_FAILED' });
    await assert.rejects(setTeamQuota(w.core, OPERATOR, 'acme', { maxForksPerCall: 1.5 }), { code: 'VALIDATION_FAILED' });
    const team = await setTeamQuota(w.core, OPERATOR, 'acme', { maxMemoryMB: null });
    assert.deepEqual(team.quota, { maxRunning: 1, maxMemoryMB: null, maxForksPerCall: null });
    await assert.rejects(setTeamQuota(w.core, { keyId: 'k', teamId: 'acme', role: 'admin' }, 'acme', { maxRunning: 9 }), { code: 'FORBIDDEN' });
    await assert.rejects(setTeamQuota(w.core, OPERATOR, 'nope', { maxRunning: 9 }), { code: 'TEAM_NOT_FOUND' });
  });
});

describe('team scoping in core', () => {
  test("another team's sandbox is not found, exactly as an unknown one; lists hold the team's own", async () => {
    const mine = await createSandbox(w.core, {}, acme);
    const theirs = await createSandbox(w.core, {});
    assert.equal((await ownedSandbox(w.core, 'acme', mine.id)).id, mine.id);
    const unknown = await ownedSandbox(w.core, 'acme', 'sbx_01M8K8X452ADP02FS1JK0BWJKD').catch((e: unknown) => e);
    const foreign = await ownedSandbox(w.core, 'acme', theirs.id).catch((e: unknown) => e);
    assert.ok(unknown instanceof RamifyError && foreign instanceof RamifyError);
    assert.deepEqual([foreign.code, foreign.status], [unknown.code, unknown.status]);
    assert.equal(foreign.code, 'SANDBOX_NOT_FOUND');
    assert.deepEqual((await listSandboxes(w.core, { teamId: 'acme' })).sandboxes.map((s) => s.id), [mine.id]);
  });

  test("snapshots by name are per team; a team's snapshot is not another's source", async () => {
    const { snapshotSandbox } = await import('../lifecycle/snapshot.js');
    const a = await createSandbox(w.core, {}, acme);
    const b = await createSandbox(w.core, {});
    await snapshotSandbox(w.core, a.id, { name: 'golden' });
    await snapshotSandbox(w.core, b.id, { name: 'golden' });
    const fromOwn = await createSandbox(w.core, { snapshot: 'golden' }, acme);
    assert.equal(fromOwn.sourceSnapshotId, (await w.store.findSnapshotByName('golden', 'acme'))?.id);
    const defaults = await w.store.findSnapshotByName('golden', 'default');
    assert.ok(defaults);
    await assert.rejects(createSandbox(w.core, { snapshot: defaults.id }, acme), { code: 'SNAPSHOT_NOT_FOUND' });
  });
});
