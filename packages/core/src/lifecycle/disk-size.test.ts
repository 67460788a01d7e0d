/**
 * Use-case tests (FAKE runtime and agent; real SQLite store) of the root disk size per sandbox: the
 * size a create asks for, checked against what the runtime can give before anything is stored, handed
 * to the runtime and (in bytes) to the agent, kept by forks, snapshots and sandboxes made from them.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RamifyError } from '@ramify/contracts';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from './create.js';
import { forkSandbox } from './fork.js';
import { snapshotSandbox } from './snapshot.js';

const MiB = 1024 * 1024;
let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld();
});
afterEach(async () => {
  await w.dispose();
});

function refusedWith(pattern: RegExp): (err: unknown) => boolean {
  return (err) => {
    assert.ok(err instanceof RamifyError, String(err));
    assert.equal(err.code, 'VALIDATION_FAILED');
    assert.match(err.message, pattern);
    assert.equal((err.details as { field?: string } | undefined)?.field, 'diskSizeMB');
    return true;
  };
}

describe('disk size per sandbox', () => {
  test('a runtime without a disk of its own refuses diskSizeMB naming the field; nothing is created; without it the size is null', async () => {
    await assert.rejects(createSandbox(w.core, { diskSizeMB: 4096 }), refusedWith(/the gvisor runtime has no disk of its own.*microvm/));
    assert.deepEqual((await w.store.listSandboxes({})).sandboxes, []);
    assert.deepEqual(w.runtime.calls, []);
    const plain = await createSandbox(w.core, {});
    assert.equal(plain.diskSizeMB, null);
    assert.equal(w.runtime.instances.get(plain.id)?.spec.resources.diskSizeMB, null);
    assert.equal(w.runtime.guest(plain.id).identities.at(-1)?.rootDiskBytes, undefined, 'the agent is told no disk size');
  });

  test('with a disk: the default, a larger size, and sizes below the image or above the most', async () => {
    w.runtime.capabilities.rootDisk = { defaultSizeMB: 2048, maxSizeMB: 8192 };
    const plain = await createSandbox(w.core, {});
    assert.equal(plain.diskSizeMB, 2048);
    const grown = await createSandbox(w.core, { diskSizeMB: 4096 });
    assert.equal(grown.diskSizeMB, 4096);
    assert.equal((await w.store.getSandbox(grown.id))?.diskSizeMB, 4096, 'stored');
    assert.equal(w.runtime.instances.get(grown.id)?.spec.resources.diskSizeMB, 4096, 'handed to the runtime');
    assert.equal(w.runtime.guest(grown.id).identities.at(-1)?.rootDiskBytes, 4096 * MiB, 'handed to the agent');
    const before = (await w.store.listSandboxes({})).sandboxes.length;
    await assert.rejects(createSandbox(w.core, { diskSizeMB: 1024 }), refusedWith(/diskSizeMB: must be at least the image's disk of 2048 MiB.*, got 1024/));
    await assert.rejects(createSandbox(w.core, { diskSizeMB: 9000 }), refusedWith(/diskSizeMB: must be at most .* 8192 MiB, got 9000/));
    assert.equal((await w.store.listSandboxes({})).sandboxes.length, before, 'refused creates store nothing');
  });

  test('a runtime that refuses the resources for the image refuses the create before anything is stored', async () => {
    w.runtime.refuseResources = 'memoryMB 4096 is more than the 1024 MiB of RAM the image was booted with';
    await assert.rejects(createSandbox(w.core, { memoryMB: 4096 }), (err: unknown) => err instanceof RamifyError && err.code === 'VALIDATION_FAILED' && /1024 MiB/.test(err.message));
    assert.deepEqual((await w.store.listSandboxes({ states: ['killed', 'error', 'running', 'creating'] })).sandboxes, []);
    assert.deepEqual(w.runtime.calls, [], 'no restore was tried');
  });

  test('forks and named snapshots keep the size; a sandbox from the snapshot may grow it, never shrink it', async () => {
    w.runtime.capabilities.rootDisk = { defaultSizeMB: 2048, maxSizeMB: 8192 };
    const parent = await createSandbox(w.core, { diskSizeMB: 3072 });
    const [child] = await forkSandbox(w.core, parent.id, { count: 1 });
    assert.equal(child?.diskSizeMB, 3072);
    assert.equal(w.runtime.guest(child?.id ?? '').identities.at(-1)?.rootDiskBytes, 3072 * MiB);
    const snap = await snapshotSandbox(w.core, parent.id, { name: 'sized' });
    assert.equal(snap.diskSizeMB, 3072);
    assert.equal((await createSandbox(w.core, { snapshot: 'sized' })).diskSizeMB, 3072);
    assert.equal((await createSandbox(w.core, { snapshot: 'sized', diskSizeMB: 5000 })).diskSizeMB, 5000);
    await assert.rejects(createSandbox(w.core, { snapshot: 'sized', diskSizeMB: 2048 }), refusedWith(/at least the image's disk of 3072 MiB/));
  });
});
