/**
 * Host ids (FAKE runtime, network and agent; a real SQLite store): two cores over one store, as two host
 * daemons over one database will be. Each records itself on what it creates and pauses, numbers its own
 * network slots, and its sweeps (reconcile, liveness) leave the other host's sandboxes alone.
 */
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Core } from '../context.js';
import { closeCoreSinks, createCore } from '../core.js';
import { silentLogger } from '../ports/logger.js';
import { FakeNetwork, FakeRuntime } from '../testing/fake-ports.js';
import { createTestWorld, TEST_HOST_ID, type TestWorld } from '../testing/world.js';
import { createSandbox } from './create.js';
import { getSandbox } from './get.js';
import { LivenessMonitor } from './liveness.js';
import { pauseSandbox } from './pause.js';
import { reconcile } from './reconcile.js';
import { resumeSandbox } from './resume.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Host A: a test world. Host B: a second core with its own runtime and network over A's store and storage. */
async function twoHosts(): Promise<{ a: TestWorld; b: Core; runtimeB: FakeRuntime }> {
  const a = await createTestWorld({ livenessPollMs: 0 });
  cleanups.push(() => a.dispose());
  const runtimeB = new FakeRuntime();
  const b = createCore({
    hostId: 'host-b', store: a.store, runtimes: [runtimeB], network: new FakeNetwork(), storage: a.storage, clock: a.clock, logger: silentLogger,
    connectAgent: runtimeB.connectAgent, options: { quietNetworkPollMs: 1_000, prewarmSlots: 0, livenessPollMs: 0 },
  });
  cleanups.push(async () => {
    await b.sessions.closeAll();
    await closeCoreSinks(b);
  });
  return { a, b, runtimeB };
}

test('each host records itself on its sandboxes and pause images, and numbers its own slots from 1', async () => {
  const { a, b } = await twoHosts();
  const onA = await createSandbox(a.core, {});
  const onB = await createSandbox(b, {});
  assert.equal(onA.hostId, TEST_HOST_ID);
  assert.equal(onB.hostId, 'host-b');
  assert.equal(onA.slot, 1);
  assert.equal(onB.slot, 1, "host B's slot 1 is its own");
  assert.deepEqual((await a.store.listSlots(TEST_HOST_ID)).map((l) => l.sandboxId), [onA.id]);
  assert.deepEqual((await a.store.listSlots('host-b')).map((l) => l.sandboxId), [onB.id]);
  const paused = await pauseSandbox(b, onB.id);
  assert.equal((await a.store.getSnapshot(paused.pausedSnapshotId!))?.hostId, 'host-b', 'the pause image is held by the host that wrote it');
  assert.equal((await resumeSandbox(b, onB.id)).hostId, 'host-b');
});

test("a host's reconcile and liveness sweeps leave another host's running sandboxes alone", async () => {
  const { a, b, runtimeB } = await twoHosts();
  const onA = await createSandbox(a.core, {});
  const onB = await createSandbox(b, {});
  // Host B's runtime has never heard of A's sandbox: unscoped, B's reconcile would call it lost.
  const report = await reconcile(b);
  assert.equal((await getSandbox(a.core, onA.id)).state, 'running');
  assert.equal((await getSandbox(b, onB.id)).state, 'running');
  assert.deepEqual(report.orphanInstances, []);
  // B's instance dies: B's liveness sweep fails it; A's sweep does not look at it.
  runtimeB.die(onB.id, 'exited');
  await new LivenessMonitor(a.core).sweep();
  assert.equal((await getSandbox(b, onB.id)).state, 'running', "A does not judge B's sandboxes");
  await new LivenessMonitor(b).sweep();
  assert.equal((await getSandbox(b, onB.id)).state, 'error');
  assert.equal((await getSandbox(a.core, onA.id)).state, 'running');
});

test('a paused sandbox resumed on another host gets a slot of that host, never the number it had on its old host', async () => {
  const { a, b } = await twoHosts();
  const moving = await createSandbox(a.core, {});
  const neighbour = await createSandbox(b, {});
  assert.equal(moving.slot, 1);
  assert.equal(neighbour.slot, 1, "B's slot 1 is its neighbour's");
  await pauseSandbox(a.core, moving.id);
  const resumed = await resumeSandbox(b, moving.id);
  assert.equal(resumed.hostId, 'host-b');
  assert.equal(resumed.slot, 2, "B's next free slot, not A's slot 1 (the neighbour's namespace on B)");
  assert.deepEqual((await a.store.listSlots('host-b')).map((l) => [l.slot, l.sandboxId]), [[1, neighbour.id], [2, moving.id]]);
  assert.deepEqual(await a.store.listSlots(TEST_HOST_ID), [], "A's lease is given up");
  assert.equal((await getSandbox(b, neighbour.id)).state, 'running');
});
