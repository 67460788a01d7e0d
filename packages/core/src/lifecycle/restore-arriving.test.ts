/**
 * Use-case tests (FAKE runtime, network and agent; real SQLite store) of a resume whose image is still
 * being downloaded (`restoreWhileArriving`, docs/design/STORAGE.md, "Restore while the image arrives"):
 * the runtime is handed the storage's `arriving` promise, a download that fails fails the resume with the
 * download's own error (the sandbox stays paused and resumable), and with the option off the storage's
 * plain `open` is used. The fake storage's `openArriving` wraps its `open` with a promise the test settles.
 */
import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RamifyError } from '@ramify/contracts';
import type { SnapshotStorage } from '../ports/snapshot-storage.js';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from './create.js';
import { getSandbox } from './get.js';
import { pauseSandbox } from './pause.js';
import { resumeSandbox } from './resume.js';

let w: TestWorld;
afterEach(async () => {
  await w.dispose();
});

/** Give the world's storage an `openArriving` whose `arriving` is `settle`'s to resolve or reject; counts its calls. */
function arrivingStorage(world: TestWorld): { opens: string[]; settle: { resolve: () => void; reject: (error: unknown) => void } } {
  const opens: string[] = [];
  const settle = { resolve: (): void => undefined, reject: (_error: unknown): void => undefined };
  (world.storage as SnapshotStorage).openArriving = async (snapshotId: string) => {
    opens.push(snapshotId);
    const opened = await world.storage.open(snapshotId);
    const arriving = new Promise<void>((resolve, reject) => Object.assign(settle, { resolve, reject }));
    arriving.catch(() => undefined);
    return { ...opened, arriving };
  };
  return { opens, settle };
}

/** Wait (a bounded number of turns of the event loop) until the fake runtime was handed `id`'s arriving image. */
async function handedArriving(id: string): Promise<void> {
  for (let turn = 0; turn < 10_000; turn++) {
    if (w.runtime.calls.includes(`restore ${id} (image arriving)`)) return;
    await new Promise((r) => setImmediate(r));
  }
  assert.fail(`the runtime was never handed ${id}'s arriving image (calls: ${w.runtime.calls.join(', ')})`);
}

describe('restore while the image arrives (fake runtime)', () => {
  test('the runtime is handed the arriving image and the resume completes once it is there', async () => {
    w = await createTestWorld({ restoreWhileArriving: true });
    const sbx = await createSandbox(w.core, {});
    await pauseSandbox(w.core, sbx.id);
    const { opens, settle } = arrivingStorage(w);
    const resumed = resumeSandbox(w.core, sbx.id);
    await handedArriving(sbx.id);
    assert.equal(w.runtime.instances.has(sbx.id), false, 'nothing restored before the image is there');
    settle.resolve();
    assert.equal((await resumed).state, 'running');
    assert.equal(opens.length, 1);
  });

  test('a download that fails fails the resume with its own error; the sandbox stays paused and resumable', async () => {
    w = await createTestWorld({ restoreWhileArriving: true });
    const sbx = await createSandbox(w.core, {});
    await pauseSandbox(w.core, sbx.id);
    const { settle } = arrivingStorage(w);
    const resumed = resumeSandbox(w.core, sbx.id);
    await handedArriving(sbx.id);
    settle.reject(new RamifyError('RUNTIME_ERROR', "snapshot 'x' is corrupt in the bucket: pages.img: chunk 00ff in the bucket is corrupt", { reason: 'checksum-mismatch' }));
    await assert.rejects(resumed, (error: unknown) => error instanceof RamifyError && error.code === 'RUNTIME_ERROR' && /is corrupt in the bucket/.test(error.message));
    const after = await getSandbox(w.core, sbx.id);
    assert.equal(after.state, 'paused');
    delete (w.storage as SnapshotStorage).openArriving;
    assert.equal((await resumeSandbox(w.core, sbx.id)).state, 'running');
  });

  test('with restoreWhileArriving off, the storage\'s plain open is used', async () => {
    w = await createTestWorld({ restoreWhileArriving: false });
    const sbx = await createSandbox(w.core, {});
    await pauseSandbox(w.core, sbx.id);
    const { opens } = arrivingStorage(w);
    assert.equal((await resumeSandbox(w.core, sbx.id)).state, 'running');
    assert.deepEqual(opens, []);
    assert.equal(w.runtime.calls.includes(`restore ${sbx.id} (image arriving)`), false);
  });
});
