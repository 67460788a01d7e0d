/**
 * Use-case tests of fork, named snapshots and the timeout scheduler with FAKE runtime, network and agent
 * (core logic only) and a real SQLite store.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { readFile, writeFile } from '../sandbox/files.js';
import { deleteSnapshot, getSnapshot, listSnapshots } from '../catalog/snapshots.js';
import { createSandbox } from './create.js';
import { forkSandbox } from './fork.js';
import { getSandbox } from './get.js';
import { killSandbox } from './kill.js';
import { pauseSandbox } from './pause.js';
import { resumeSandbox } from './resume.js';
import { snapshotSandbox } from './snapshot.js';
import { TimeoutScheduler } from './timeouts.js';

let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld();
});
afterEach(async () => {
  await w.dispose();
});

async function* bytes(text: string): AsyncIterable<Uint8Array> {
  yield new TextEncoder().encode(text);
}
async function read(sandboxId: string, path: string): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const c of await readFile(w.core, sandboxId, path)) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

describe('fork (fake runtime)', () => {
  test('of a running sandbox: one checkpoint, parent restored with its deadline, N children with own ids, slots and entropy', async () => {
    const parent = await createSandbox(w.core, { metadata: { team: 'x' }, envs: { E: '1' }, timeoutMs: 50_000 });
    await writeFile(w.core, parent.id, '/root/work.txt', bytes('shared past'));
    const children = await forkSandbox(w.core, parent.id, { count: 3 });
    assert.equal(children.length, 3);
    assert.equal(w.runtime.calls.filter((c) => c.startsWith('checkpoint')).length, 1);
    const after = await getSandbox(w.core, parent.id);
    assert.equal(after.state, 'running');
    assert.equal(after.endAt, parent.endAt);
    assert.equal(after.operation, null);
    assert.equal(after.slot, parent.slot);

    const forkSnap = await w.store.getSnapshot(children[0].sourceSnapshotId ?? '');
    assert.equal(forkSnap?.kind, 'fork');
    assert.equal(forkSnap?.sandboxId, parent.id);
    const slots = new Set([parent.slot, ...children.map((c) => c.slot)]);
    assert.equal(slots.size, 4);
    const entropy = new Set<string>();
    for (const child of children) {
      assert.equal(child.state, 'running');
      assert.equal(child.parentId, parent.id);
      assert.deepEqual(child.metadata, { team: 'x' });
      assert.equal(await read(child.id, '/root/work.txt'), 'shared past');
      const identity = w.runtime.guest(child.id).identities.at(-1);
      assert.equal(identity?.sandboxId, child.id);
      entropy.add(identity?.entropyHex ?? '');
    }
    entropy.add(w.runtime.guest(parent.id).identities.at(-1)?.entropyHex ?? '');
    assert.equal(entropy.size, 4, 'every sandbox got its own entropy');

    await writeFile(w.core, children[0].id, '/root/work.txt', bytes('diverged'));
    assert.equal(await read(children[1].id, '/root/work.txt'), 'shared past');
  });

  test('of a paused sandbox: uses the pause image, the parent stays paused', async () => {
    const parent = await createSandbox(w.core, {});
    const paused = await pauseSandbox(w.core, parent.id);
    const children = await forkSandbox(w.core, parent.id, { count: 2 });
    assert.deepEqual(children.map((c) => c.sourceSnapshotId), [paused.pausedSnapshotId, paused.pausedSnapshotId]);
    assert.equal((await getSandbox(w.core, parent.id)).state, 'paused');
    // The parent resuming must not collect the image its children came from.
    await resumeSandbox(w.core, parent.id);
    assert.ok(await w.store.getSnapshot(paused.pausedSnapshotId ?? ''));
    for (const c of children) await killSandbox(w.core, c.id);
    assert.equal(await w.store.getSnapshot(paused.pausedSnapshotId ?? ''), null, 'collected once no live sandbox needs it');
  });

  test('blocked by open endpoints: CHECKPOINT_BLOCKED, parent keeps running, no child made', async () => {
    const parent = await createSandbox(w.core, {});
    w.runtime.guest(parent.id).endpoints.push('10.0.0.2:5 -> 8.8.8.8:53 ESTABLISHED');
    await assert.rejects(forkSandbox(w.core, parent.id, { count: 2 }), { code: 'CHECKPOINT_BLOCKED' });
    assert.equal((await getSandbox(w.core, parent.id)).state, 'running');
    assert.equal(w.runtime.instances.size, 1);
  });

  test('all or nothing: when one child fails the others are killed and the parent is running again', async () => {
    const parent = await createSandbox(w.core, {});
    const restores = w.runtime.restore.bind(w.runtime);
    let n = 0;
    w.runtime.restore = async (spec, dir) => {
      if (spec.sandboxId !== parent.id && ++n === 2) throw new Error('second child does not fit');
      return restores(spec, dir);
    };
    await assert.rejects(forkSandbox(w.core, parent.id, { count: 3 }), /second child does not fit/);
    assert.equal((await getSandbox(w.core, parent.id)).state, 'running');
    assert.deepEqual([...w.runtime.instances.keys()], [parent.id]);
    assert.deepEqual((await w.store.listSlots('host-test')).map((l) => l.sandboxId), [parent.id]);
  });

  test('count outside 1..64 is VALIDATION_FAILED; a creating/killed sandbox is refused', async () => {
    const parent = await createSandbox(w.core, {});
    await assert.rejects(forkSandbox(w.core, parent.id, { count: 0 }), { code: 'VALIDATION_FAILED' });
    await assert.rejects(forkSandbox(w.core, parent.id, { count: 65 }), { code: 'VALIDATION_FAILED' });
    await killSandbox(w.core, parent.id);
    await assert.rejects(forkSandbox(w.core, parent.id, { count: 1 }), { code: 'INVALID_STATE' });
  });
});

describe('named snapshots (fake runtime)', () => {
  test('of a running sandbox: it keeps running; the snapshot outlives it and seeds new sandboxes', async () => {
    const sbx = await createSandbox(w.core, { cpuCount: 2 });
    await writeFile(w.core, sbx.id, '/root/model.bin', bytes('weights'));
    const snap = await snapshotSandbox(w.core, sbx.id, { name: 'trained' });
    assert.equal(snap.kind, 'named');
    assert.equal(snap.name, 'trained');
    assert.equal(snap.parentSnapshotId, 'snap_tpl');
    assert.equal((await getSandbox(w.core, sbx.id)).state, 'running');
    await killSandbox(w.core, sbx.id);
    assert.equal((await getSnapshot(w.core, 'trained')).id, snap.id);

    const clone = await createSandbox(w.core, { snapshot: 'trained' });
    assert.equal(clone.sourceSnapshotId, snap.id);
    assert.equal(clone.cpuCount, 2, 'resources default to the snapshot source');
    assert.equal(await read(clone.id, '/root/model.bin'), 'weights');
    await assert.rejects(snapshotSandbox(w.core, clone.id, { name: 'trained' }), { code: 'CONFLICT' });
  });

  test('of a paused sandbox: its pause image becomes the named snapshot; deleting it is refused while needed', async () => {
    const sbx = await createSandbox(w.core, {});
    const paused = await pauseSandbox(w.core, sbx.id);
    const snap = await snapshotSandbox(w.core, sbx.id, { name: 'frozen' });
    assert.equal(snap.id, paused.pausedSnapshotId);
    await assert.rejects(snapshotSandbox(w.core, sbx.id, { name: 'again' }), { code: 'CONFLICT' });
    await assert.rejects(deleteSnapshot(w.core, snap.id), { code: 'CONFLICT' });
    await resumeSandbox(w.core, sbx.id);
    assert.ok(await w.store.getSnapshot(snap.id), 'a named snapshot is never collected');
    await deleteSnapshot(w.core, 'frozen'); // by name, as create accepts it
    await assert.rejects(getSnapshot(w.core, snap.id), { code: 'SNAPSHOT_NOT_FOUND' });
    await assert.rejects(deleteSnapshot(w.core, 'template-image-is-needed'), { code: 'SNAPSHOT_NOT_FOUND' });
    await assert.rejects(deleteSnapshot(w.core, 'snap_tpl'), { code: 'CONFLICT' });
    assert.deepEqual((await listSnapshots(w.core)).map((s) => s.id), ['snap_tpl']);
  });
});

describe('timeout scheduler (fake runtime)', () => {
  test('at the deadline: pause by default, kill when asked; the clock stops while paused', async () => {
    const pauser = await createSandbox(w.core, { timeoutMs: 1_000 });
    const killer = await createSandbox(w.core, { timeoutMs: 1_000, onTimeout: 'kill' });
    const keeper = await createSandbox(w.core, { timeoutMs: 5_000 });
    const scheduler = new TimeoutScheduler(w.core);
    await scheduler.sweep();
    assert.equal((await getSandbox(w.core, pauser.id)).state, 'running');
    w.clock.advance(1_000);
    await scheduler.sweep();
    assert.equal((await getSandbox(w.core, pauser.id)).state, 'paused');
    assert.equal((await getSandbox(w.core, killer.id)).state, 'killed');
    assert.equal((await getSandbox(w.core, keeper.id)).state, 'running');
    w.clock.advance(100_000);
    await scheduler.sweep();
    assert.equal((await getSandbox(w.core, pauser.id)).state, 'paused', 'a paused sandbox has no deadline');
  });

  test('a timeout pause refused by open endpoints leaves it running and is retried later', async () => {
    const sbx = await createSandbox(w.core, { timeoutMs: 1_000 });
    const guest = w.runtime.guest(sbx.id);
    guest.endpoints.push('10.0.0.2:9 -> 1.2.3.4:443 ESTABLISHED');
    w.clock.advance(1_000);
    const scheduler = new TimeoutScheduler(w.core);
    await scheduler.sweep();
    assert.equal((await getSandbox(w.core, sbx.id)).state, 'running');
    guest.endpoints.length = 0;
    await scheduler.sweep();
    assert.equal((await getSandbox(w.core, sbx.id)).state, 'running', 'not retried before timeoutRetryMs');
    w.clock.advance(w.core.options.timeoutRetryMs);
    await scheduler.sweep();
    assert.equal((await getSandbox(w.core, sbx.id)).state, 'paused');
  });
});
