/**
 * Use-case tests (FAKE runtime and agent; real SQLite store) of forking a running sandbox on a runtime
 * that takes the fork point in place (`Runtime.checkpointKeepRunning`, as the microVM runtime does): the
 * parent is never checkpointed-and-restored, stays `running` in the same instance with its deadline,
 * and its agent works again afterwards; a failed fork point leaves it running and no snapshot behind.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Core } from '../context.js';
import { createCore } from '../core.js';
import { silentLogger } from '../ports/logger.js';
import { readFile, writeFile } from '../sandbox/files.js';
import { FakeKeepRunningRuntime } from '../testing/fake-ports.js';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from './create.js';
import { forkSandbox } from './fork.js';
import { getSandbox } from './get.js';

let w: TestWorld;
let runtime: FakeKeepRunningRuntime;
let core: Core;
beforeEach(async () => {
  w = await createTestWorld();
  runtime = new FakeKeepRunningRuntime({ checkpointNeedsQuietNetwork: false });
  core = createCore({ ...w.core, runtimes: [runtime], connectAgent: runtime.connectAgent, logger: silentLogger });
});
afterEach(async () => {
  await core.sessions.closeAll();
  await w.dispose();
});

async function* bytes(text: string): AsyncIterable<Uint8Array> {
  yield new TextEncoder().encode(text);
}
async function read(sandboxId: string, path: string): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const c of await readFile(core, sandboxId, path)) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

describe('fork of a running sandbox with an in-place fork point (fake runtime)', () => {
  test('the parent keeps its instance, state and deadline; the children start from the fork point', async () => {
    const parent = await createSandbox(core, { timeoutMs: 60_000 });
    await writeFile(core, parent.id, '/root/before.txt', bytes('before the fork'));
    const instance = runtime.instances.get(parent.id);
    const children = await forkSandbox(core, parent.id, { count: 2 });
    assert.deepEqual(runtime.calls.filter((c) => c.endsWith(parent.id)), [`restore ${parent.id}`, `checkpointKeepRunning ${parent.id}`], 'never checkpointed or restored again');
    assert.equal(runtime.instances.get(parent.id), instance, 'the same instance goes on');
    const after = await getSandbox(core, parent.id);
    assert.equal(after.state, 'running');
    assert.equal(after.endAt, parent.endAt);
    assert.equal(after.operation, null);
    assert.equal(after.pausedSnapshotId, null);
    await writeFile(core, parent.id, '/root/after.txt', bytes('parent only'));
    for (const child of children) {
      assert.equal(child.state, 'running');
      assert.equal(await read(child.id, '/root/before.txt'), 'before the fork');
      await assert.rejects(read(child.id, '/root/after.txt'), { code: 'FILE_NOT_FOUND' });
    }
    const point = await w.store.getSnapshot(children[0]?.sourceSnapshotId ?? '');
    assert.equal(point?.kind, 'fork');
    assert.equal(point?.status, 'ready');
  });

  test('a failed fork point leaves the parent running with its agent, and no snapshot or child behind', async () => {
    const parent = await createSandbox(core, {});
    runtime.failNextForkPoint = true;
    await assert.rejects(forkSandbox(core, parent.id, { count: 2 }), { code: 'RUNTIME_ERROR' });
    const after = await getSandbox(core, parent.id);
    assert.equal(after.state, 'running');
    assert.equal(after.operation, null);
    assert.equal(await read(parent.id, '/root/hello.txt'), 'hi');
    const snapshots = (await w.store.listSnapshots()).filter((s) => s.kind === 'fork');
    assert.deepEqual(snapshots, []);
    assert.deepEqual((await w.store.listSandboxes({})).sandboxes.map((s) => s.id), [parent.id]);
  });
});
