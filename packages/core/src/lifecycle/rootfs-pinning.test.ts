/**
 * Use-case tests (FAKE runtime, network and agent; real SQLite store) of root filesystem pinning: an image
 * is only valid on the rootfs it was made on, so a template rebuild (the template record pointing at a new
 * rootfs directory) must not move paused sandboxes, fork points or named snapshots onto the new one.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from './create.js';
import { forkSandbox } from './fork.js';
import { getSandbox } from './get.js';
import { killSandbox } from './kill.js';
import { pauseSandbox } from './pause.js';
import { resumeSandbox } from './resume.js';
import { snapshotSandbox } from './snapshot.js';

let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld();
});
afterEach(async () => {
  await w.dispose();
});

/** The rootfs the fake runtime was last given for a running sandbox. */
function runningOn(sandboxId: string): string {
  const instance = w.runtime.instances.get(sandboxId);
  assert.ok(instance, `${sandboxId} is not running in the fake runtime`);
  return instance.spec.rootfsDir;
}

/**
 * Simulate `ramify template build` of a changed spec under the same name: a new image made on a new rootfs
 * directory, and the same template id re-pointed at both (what the builder's `putTemplate` does).
 * @returns the new rootfs directory.
 */
async function rebuildTemplate(): Promise<string> {
  const rootfsDir = join(w.dir, 'rootfs', 'base-2');
  await mkdir(rootfsDir, { recursive: true });
  const { imageDir } = await w.storage.prepare('snap_tpl_2');
  await mkdir(imageDir);
  await writeFile(join(imageDir, 'guest.json'), JSON.stringify({ files: { '/root/rebuilt.txt': 'v2' }, endpoints: [], identities: [] }));
  const manifest = await w.storage.commit({ snapshotId: 'snap_tpl_2', runtime: 'gvisor', templateId: 'tpl_base', parentSnapshotId: null });
  await w.store.insertSnapshot({
    id: 'snap_tpl_2', teamId: 'default', name: null, kind: 'template', status: 'ready', runtime: 'gvisor', templateId: 'tpl_base', sandboxId: null,
    parentSnapshotId: null, sizeBytes: manifest.sizeBytes, createdAt: 2, cpuCount: 1, memoryMB: 512, diskSizeMB: null, rootfsDir, envs: null, egress: null, hostId: 'host-test',
  });
  const template = await w.store.getTemplate('tpl_base');
  assert.ok(template);
  await w.store.putTemplate({ ...template, specHash: 'h2', snapshotId: 'snap_tpl_2', rootfsDir, createdAt: 2 });
  assert.equal((await w.store.getTemplate('tpl_base'))?.rootfsDir, rootfsDir);
  return rootfsDir;
}

describe('root filesystem pinning (fake runtime)', () => {
  test('a sandbox paused before a template rebuild resumes on its old rootfs; new sandboxes get the new one', async () => {
    const oldRootfs = w.rootfsDir;
    const sbx = await createSandbox(w.core, {});
    assert.equal(sbx.rootfsDir, oldRootfs);
    assert.equal(runningOn(sbx.id), oldRootfs);
    const paused = await pauseSandbox(w.core, sbx.id);
    assert.equal((await w.store.getSnapshot(paused.pausedSnapshotId ?? ''))?.rootfsDir, oldRootfs, 'the pause image records its rootfs');

    const newRootfs = await rebuildTemplate();
    const resumed = await resumeSandbox(w.core, sbx.id);
    assert.equal(resumed.state, 'running');
    assert.equal(resumed.rootfsDir, oldRootfs);
    assert.equal(runningOn(sbx.id), oldRootfs);

    const fresh = await createSandbox(w.core, { template: 'base' });
    assert.equal(fresh.rootfsDir, newRootfs);
    assert.equal(fresh.sourceSnapshotId, 'snap_tpl_2');
    assert.equal(runningOn(fresh.id), newRootfs);
  });

  test('fork after a rebuild: children (of a running or a paused parent) and the restored parent stay on the parent rootfs', async () => {
    const oldRootfs = w.rootfsDir;
    const running = await createSandbox(w.core, {});
    const paused = await pauseSandbox(w.core, (await createSandbox(w.core, {})).id);
    await rebuildTemplate();

    const children = await forkSandbox(w.core, running.id, { count: 2 });
    assert.equal((await w.store.getSnapshot(children[0].sourceSnapshotId ?? ''))?.rootfsDir, oldRootfs, 'the fork point records its rootfs');
    assert.equal(runningOn(running.id), oldRootfs, 'the parent is restored on its own rootfs');
    const [pausedChild] = await forkSandbox(w.core, paused.id, { count: 1 });
    for (const child of [...children, pausedChild]) {
      assert.equal(child.rootfsDir, oldRootfs);
      assert.equal(runningOn(child.id), oldRootfs);
    }

    // The pin is persisted on the child: its own pause and resume keep it.
    await pauseSandbox(w.core, children[0].id);
    await resumeSandbox(w.core, children[0].id);
    assert.equal(runningOn(children[0].id), oldRootfs);
  });

  test('create from a named snapshot taken before a rebuild restores on the snapshot rootfs', async () => {
    const oldRootfs = w.rootfsDir;
    const source = await createSandbox(w.core, {});
    const golden = await snapshotSandbox(w.core, source.id, { name: 'golden' });
    assert.equal(golden.rootfsDir, oldRootfs);
    await killSandbox(w.core, source.id);
    await rebuildTemplate();

    const restored = await createSandbox(w.core, { snapshot: 'golden' });
    assert.equal(restored.rootfsDir, oldRootfs);
    assert.equal(runningOn(restored.id), oldRootfs);
    assert.equal((await w.store.getSandbox(restored.id))?.rootfsDir, oldRootfs);
  });

  test('a pinned rootfs that is gone: RUNTIME_ERROR naming it, nothing restored, a paused sandbox stays paused', async () => {
    const oldRootfs = w.rootfsDir;
    const sbx = await createSandbox(w.core, {});
    await snapshotSandbox(w.core, sbx.id, { name: 'golden' });
    await pauseSandbox(w.core, sbx.id);
    await rebuildTemplate();
    await rm(oldRootfs, { recursive: true });
    const restoresBefore = w.runtime.calls.filter((c) => c.startsWith('restore')).length;

    await assert.rejects(resumeSandbox(w.core, sbx.id), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'RUNTIME_ERROR');
      assert.ok(err.message.includes(`'${oldRootfs}' no longer exists`), err.message);
      return true;
    });
    const after = await getSandbox(w.core, sbx.id);
    assert.equal(after.state, 'paused');
    assert.ok(after.pausedSnapshotId);

    await assert.rejects(createSandbox(w.core, { snapshot: 'golden' }), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'RUNTIME_ERROR');
      assert.ok(err.message.includes(oldRootfs), err.message);
      return true;
    });
    assert.equal(w.runtime.calls.filter((c) => c.startsWith('restore')).length, restoresBefore, 'never restored on another rootfs');
  });
});
