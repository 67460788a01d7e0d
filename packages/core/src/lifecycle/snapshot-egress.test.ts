/**
 * A snapshot keeps its sandbox's egress policy: every snapshot row core writes (named snapshot, pause
 * image, fork point) records the policy in force when it was taken (a pause image named later: when it
 * was named), and a sandbox created from the snapshot starts with it, stored and enforced before its
 * image is restored, unless the create request gives `egress` (which replaces it). Rows that recorded
 * none (template images; old rows whose sandbox is gone) start open, the latter with a warning.
 * FAKE runtime, network, agent and egress enforcer (core logic only) and a real SQLite store.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { CreateSandboxRequest } from '@ramify/contracts';
import { createCore } from '../core.js';
import { getEgressPolicy, toEgressPolicyInfo } from '../egress/get-egress.js';
import { setEgressPolicy } from '../egress/set-egress.js';
import { silentLogger, type Logger } from '../ports/logger.js';
import { FakeKeepRunningRuntime } from '../testing/fake-ports.js';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from './create.js';
import { forkSandbox } from './fork.js';
import { pauseSandbox } from './pause.js';
import { toSnapshotInfo } from './records.js';
import { snapshotSandbox } from './snapshot.js';

let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld();
});
afterEach(async () => {
  await w.dispose();
});

const policyOf = async (id: string) => {
  const { mode, rules } = toEgressPolicyInfo(await getEgressPolicy(w.core, id));
  return { mode, rules };
};

/** A running sandbox with `egress`, snapshotted as `name`; its policy is changed afterwards (the snapshot must not follow). */
async function snapshotOf(egress: CreateSandboxRequest['egress'], name: string): Promise<string> {
  const source = await createSandbox(w.core, { egress });
  const snap = await snapshotSandbox(w.core, source.id, { name });
  await setEgressPolicy(w.core, source.id, ['later.example.com']);
  return snap.id;
}

/** Whether the enforcer was asked for `sandboxId`'s policy while its runtime instance was not up yet. */
function recordEnforcedBeforeRestore(): Map<string, boolean> {
  const beforeRestore = new Map<string, boolean>();
  const apply = w.egress.apply.bind(w.egress);
  w.egress.apply = async (sandboxId, slot, policy) => {
    if (!beforeRestore.has(sandboxId)) beforeRestore.set(sandboxId, !w.runtime.instances.has(sandboxId));
    return apply(sandboxId, slot, policy);
  };
  return beforeRestore;
}

describe('snapshot egress (fake runtime)', () => {
  test('a named snapshot of a deny-all sandbox records deny-all; a sandbox created from it is deny-all, enforced before its restore', async () => {
    const snapshotId = await snapshotOf({ mode: 'deny-all' }, 'sealed');
    assert.deepEqual((await w.store.getSnapshot(snapshotId))?.egress, { mode: 'deny-all', rules: [] });
    const beforeRestore = recordEnforcedBeforeRestore();
    const sbx = await createSandbox(w.core, { snapshot: 'sealed' });
    assert.deepEqual(await policyOf(sbx.id), { mode: 'deny-all', rules: [] });
    assert.equal(w.egress.modeOf(sbx.id), 'deny-all');
    assert.equal(beforeRestore.get(sbx.id), true, 'the first policy on its slot was deny-all, before the image ran');
    // By id too.
    assert.deepEqual(await policyOf((await createSandbox(w.core, { snapshot: snapshotId })).id), { mode: 'deny-all', rules: [] });
  });

  test('a snapshot of an allowlist sandbox gives its rules, not the ones its sandbox has now', async () => {
    await snapshotOf(['PyPI.org', '10.0.0.0/8:22'], 'allow');
    const sbx = await createSandbox(w.core, { snapshot: 'allow' });
    assert.deepEqual(await policyOf(sbx.id), { mode: 'allowlist', rules: ['pypi.org', '10.0.0.0/8:22'] });
    assert.deepEqual(w.egress.rulesOf(sbx.id), ['pypi.org', '10.0.0.0/8:22']);
  });

  test("the create request's egress replaces the snapshot's (rules, [] = open, deny-all); the snapshot row is not modified", async () => {
    await snapshotOf({ mode: 'deny-all' }, 'sealed');
    await snapshotOf(['pypi.org'], 'allow');
    const cases: Array<[string, CreateSandboxRequest['egress'], { mode: string; rules: string[] }]> = [
      ['sealed', ['example.com:443'], { mode: 'allowlist', rules: ['example.com:443'] }],
      ['sealed', [], { mode: 'open', rules: [] }],
      ['sealed', { mode: 'open' }, { mode: 'open', rules: [] }],
      ['allow', { mode: 'deny-all' }, { mode: 'deny-all', rules: [] }],
      ['allow', ['192.0.2.7:80'], { mode: 'allowlist', rules: ['192.0.2.7:80'] }],
    ];
    for (const [snapshot, egress, expected] of cases) {
      const sbx = await createSandbox(w.core, { snapshot, egress });
      assert.deepEqual(await policyOf(sbx.id), expected, `${snapshot} with ${JSON.stringify(egress)}`);
      assert.equal(w.egress.modeOf(sbx.id), expected.mode);
    }
    assert.deepEqual((await w.store.findSnapshotByName('sealed', 'default'))?.egress, { mode: 'deny-all', rules: [] });
    assert.deepEqual((await w.store.findSnapshotByName('allow', 'default'))?.egress, { mode: 'allowlist', rules: ['pypi.org'] });
    // A bad override fails the create before anything starts, as without a snapshot.
    await assert.rejects(createSandbox(w.core, { snapshot: 'sealed', egress: ['none'] }), { code: 'VALIDATION_FAILED' });
  });

  test('a sandbox that never set a policy records open; pause images and fork points record the policy too', async () => {
    const open = await createSandbox(w.core, {});
    assert.deepEqual((await snapshotSandbox(w.core, open.id, { name: 'open' })).egress, { mode: 'open', rules: [] });
    assert.deepEqual(await policyOf((await createSandbox(w.core, { snapshot: 'open' })).id), { mode: 'open', rules: [] });

    const source = await createSandbox(w.core, { egress: { mode: 'deny-all' } });
    const [child] = await forkSandbox(w.core, source.id, { count: 1 });
    const forkPoint = await w.store.getSnapshot(child.sourceSnapshotId ?? '');
    assert.equal(forkPoint?.kind, 'fork');
    assert.deepEqual(forkPoint?.egress, { mode: 'deny-all', rules: [] });
    const paused = await pauseSandbox(w.core, source.id);
    const pauseImage = await w.store.getSnapshot(paused.pausedSnapshotId ?? '');
    assert.equal(pauseImage?.kind, 'pause');
    assert.deepEqual(pauseImage?.egress, { mode: 'deny-all', rules: [] });
  });

  test('a pause image named later records the policy in force when it is named (changed while paused)', async () => {
    const source = await createSandbox(w.core, { egress: { mode: 'deny-all' } });
    const paused = await pauseSandbox(w.core, source.id);
    await setEgressPolicy(w.core, source.id, ['pypi.org:443']);
    const named = await snapshotSandbox(w.core, source.id, { name: 'late' });
    assert.equal(named.id, paused.pausedSnapshotId);
    assert.deepEqual(named.egress, { mode: 'allowlist', rules: ['pypi.org:443'] });
    assert.deepEqual(await policyOf((await createSandbox(w.core, { snapshot: 'late' })).id), { mode: 'allowlist', rules: ['pypi.org:443'] });
  });

  test('an in-place fork point (checkpointKeepRunning) records the policy', async () => {
    const runtime = new FakeKeepRunningRuntime({ checkpointNeedsQuietNetwork: false });
    const core = createCore({ ...w.core, runtimes: [runtime], connectAgent: runtime.connectAgent, logger: silentLogger });
    try {
      const parent = await createSandbox(core, { egress: ['pypi.org'] });
      const [child] = await forkSandbox(core, parent.id, { count: 1 });
      assert.deepEqual((await w.store.getSnapshot(child?.sourceSnapshotId ?? ''))?.egress, { mode: 'allowlist', rules: ['pypi.org'] });
    } finally {
      await core.sessions.closeAll();
    }
  });

  test('the API shape shows the recorded policy; a template image shows none and gives open, without a warning', async () => {
    const snapshotId = await snapshotOf(['pypi.org'], 'allow');
    assert.deepEqual(toSnapshotInfo((await w.store.getSnapshot(snapshotId))!).egress, { mode: 'allowlist', rules: ['pypi.org'] });
    const warnings: string[] = [];
    const core = createCore({ ...w.core, logger: recordingLogger(warnings) });
    try {
      const base = await w.store.findTemplateByName('base', 'default');
      const image = await w.store.getSnapshot(base?.snapshotId ?? '');
      assert.equal(image?.egress, null);
      assert.equal(toSnapshotInfo(image!).egress, null);
      const sbx = await createSandbox(core, { snapshot: image!.id });
      assert.deepEqual(await policyOf(sbx.id), { mode: 'open', rules: [] });
      assert.deepEqual(warnings, []);
    } finally {
      await core.sessions.closeAll();
    }
  });

  test('a snapshot that recorded none (old row, its sandbox gone) starts open and says so in the log; a request policy still applies', async () => {
    const snapshotId = await snapshotOf({ mode: 'deny-all' }, 'old');
    await w.store.updateSnapshot(snapshotId, { egress: null });
    const warnings: string[] = [];
    const core = createCore({ ...w.core, logger: recordingLogger(warnings) });
    try {
      const sbx = await createSandbox(core, { snapshot: 'old' });
      assert.deepEqual(toEgressPolicyInfo(await getEgressPolicy(core, sbx.id)), { mode: 'open', rules: [], updatedAt: null });
      assert.equal(w.egress.modeOf(sbx.id), 'open');
      assert.equal(warnings.length, 1);
      assert.match(warnings[0] ?? '', /recorded no egress policy.*starts open/);
      const sealed = await createSandbox(core, { snapshot: 'old', egress: { mode: 'deny-all' } });
      assert.equal(w.egress.modeOf(sealed.id), 'deny-all');
      assert.equal(warnings.length, 1, 'no warning when the request gives the policy');
    } finally {
      await core.sessions.closeAll();
    }
  });

  test('a recorded rule an earlier daemon accepted (a single label) still restores', async () => {
    const snapshotId = await snapshotOf(['pypi.org'], 'legacy');
    await w.store.updateSnapshot(snapshotId, { egress: { mode: 'allowlist', rules: ['none'] } });
    const sbx = await createSandbox(w.core, { snapshot: 'legacy' });
    assert.equal(sbx.state, 'running');
    assert.deepEqual(w.egress.rulesOf(sbx.id), ['none']);
  });
});

/** A logger that keeps the messages of its warnings in `warnings`. */
function recordingLogger(warnings: string[]): Logger {
  return { ...silentLogger, warn: (message) => warnings.push(message) };
}
