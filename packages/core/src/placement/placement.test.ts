/**
 * Placement's decisions (a real SQLite store; no runtime involved): creates reserve a host with room,
 * preferring the one caching the template image; calls on a sandbox go to its live host; a paused sandbox
 * on a lost host moves only once its image is durable (else SANDBOX_UNAVAILABLE); a host accepts only its
 * own live reservations; the sweep writes off expired hosts.
 */
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import type { HostRegistration } from '../ports/hosts.js';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from '../lifecycle/create.js';
import { pauseSandbox } from '../lifecycle/pause.js';
import { killOnLostHost, sweepLostHosts } from './host-loss.js';
import { acceptPlacement, imageDurable, placeCreate, placeFork, placeOnSandbox, PLACEMENT_HEADER } from './placement.js';

const worlds: TestWorld[] = [];
afterEach(async () => {
  for (const w of worlds.splice(0)) await w.dispose();
});

async function world(): Promise<TestWorld> {
  const w = await createTestWorld();
  worlds.push(w);
  return w;
}

const host = (id: string, overrides: Partial<HostRegistration> = {}): HostRegistration => ({
  id, url: `http://${id}:7423`, capacity: { memoryMB: 4096, cpus: 8, slots: 64 }, cachedImageIds: [], pendingUploadIds: [], hostNowMs: Date.now(), leaseMs: 60_000,
  maxClockSkewMs: 2000, ...overrides,
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('create: reserved on a host with room, the one caching the template image first; none with room is NO_HOST_CAPACITY', async () => {
  const w = await world();
  await w.core.store.registerHost(host('host-a'));
  await w.core.store.registerHost(host('host-b', { cachedImageIds: ['snap_tpl'] }));
  const target = await placeCreate(w.core, {}, 'default');
  assert.equal(target.hostId, 'host-b');
  assert.equal(target.url, 'http://host-b:7423');
  assert.equal(target.reservation?.memoryMB, w.core.options.defaultMemoryMB);
  assert.equal((await w.core.store.getReservation(target.reservation!.id))?.hostId, 'host-b');
  await assert.rejects(placeCreate(w.core, { memoryMB: 8192 }, 'default'), { code: 'NO_HOST_CAPACITY' });
});

test('a call on a sandbox goes to its live host; on a lost host it is HOST_LOST', async () => {
  const w = await world();
  await w.core.store.registerHost(host(w.core.hostId));
  const id = (await createSandbox(w.core, {})).id;
  const record = (await w.core.store.getSandbox(id))!;
  assert.deepEqual(await placeOnSandbox(w.core, record, 'call'), { hostId: w.core.hostId, url: `http://${w.core.hostId}:7423`, reservation: null });
  await w.core.store.setHostState(w.core.hostId, 'gone');
  await assert.rejects(placeOnSandbox(w.core, record, 'call'), { code: 'HOST_LOST' });
  await assert.rejects(placeOnSandbox(w.core, record, 'resume'), { code: 'HOST_LOST' }, 'a running sandbox cannot move');
});

test('resume of a paused sandbox on a lost host: elsewhere once durable, SANDBOX_UNAVAILABLE while pending', async () => {
  const w = await world();
  await w.core.store.registerHost(host(w.core.hostId, { leaseMs: 1 }));
  await w.core.store.registerHost(host('host-b'));
  const id = (await createSandbox(w.core, {})).id;
  await pauseSandbox(w.core, id);
  const record = (await w.core.store.getSandbox(id))!;
  const image = (await w.core.store.getSnapshot(record.pausedSnapshotId!))!;
  await sleep(10);
  // The lost host's last heartbeat listed the image as pending upload.
  await w.core.store.registerHost(host(w.core.hostId, { leaseMs: 1, pendingUploadIds: [image.id] }));
  await sleep(10);
  await assert.rejects(placeOnSandbox(w.core, record, 'resume'), { code: 'SANDBOX_UNAVAILABLE' });
  // A heartbeat long after the pause, not listing it: durable, so it moves to a host with room.
  const lost = await w.core.store.getHost(w.core.hostId);
  assert.equal(imageDurable({ ...lost!, pendingUploadIds: [], lastHeartbeatAt: image.createdAt + 5000 }, image.id, image.createdAt), true);
  assert.equal(imageDurable({ ...lost!, pendingUploadIds: [], lastHeartbeatAt: image.createdAt + 1000 }, image.id, image.createdAt), false, 'within the clock skew allowed');
  // (The test world's clock wrote the image long before this heartbeat.)
  await w.core.store.registerHost(host(w.core.hostId, { leaseMs: 1 }));
  await sleep(10);
  const moved = await placeOnSandbox(w.core, record, 'resume');
  assert.equal(moved.hostId, 'host-b');
  assert.equal(moved.reservation?.memoryMB, record.memoryMB);
});

test('a host accepts only a live reservation of its own', async () => {
  const w = await world();
  await w.core.store.registerHost(host(w.core.hostId));
  await w.core.store.registerHost(host('host-b', { capacity: { memoryMB: 1, cpus: 1, slots: 1 } }));
  const mine = await placeCreate(w.core, {}, 'default');
  assert.equal(mine.hostId, w.core.hostId);
  assert.equal((await acceptPlacement(w.core, mine.reservation!.id)).id, mine.reservation!.id);
  await assert.rejects(acceptPlacement(w.core, undefined), (err: { code?: string; message?: string }) => err.code === 'PLACEMENT_INVALID' && err.message!.includes(PLACEMENT_HEADER));
  await assert.rejects(acceptPlacement(w.core, 'rsv_forged'), { code: 'PLACEMENT_INVALID' });
  await assert.rejects(acceptPlacement({ ...w.core, hostId: 'host-b' }, mine.reservation!.id), { code: 'PLACEMENT_INVALID' }, "another host's reservation");
  await w.core.store.releaseReservation(mine.reservation!.id);
  await assert.rejects(acceptPlacement(w.core, mine.reservation!.id), { code: 'PLACEMENT_INVALID' });
});

test('the sweep writes off an expired host: its running sandboxes error HOST_LOST, paused ones stay', async () => {
  const w = await world();
  await w.core.store.registerHost(host(w.core.hostId, { leaseMs: 1 }));
  const running = (await createSandbox(w.core, {})).id;
  const paused = (await createSandbox(w.core, {})).id;
  await pauseSandbox(w.core, paused);
  await sleep(10);
  const seen: string[] = [];
  w.core.events.onState((e) => seen.push(`${e.sandboxId} ${e.from}->${e.to}`));
  const lost = await sweepLostHosts(w.core);
  assert.deepEqual(lost, [{ hostId: w.core.hostId, lostSandboxIds: [running], previousStates: { [running]: 'running' } }]);
  assert.deepEqual(seen, [`${running} running->error`], 'the transition is announced on the bus');
  assert.equal((await w.core.store.getSandbox(running))?.state, 'error');
  assert.equal((await w.core.store.getSandbox(paused))?.state, 'paused');
  assert.deepEqual(await sweepLostHosts(w.core), []);
  // A kill without the host: recorded, its slot freed; again is a no-op.
  for (const id of [running, paused]) {
    assert.equal((await killOnLostHost(w.core, (await w.core.store.getSandbox(id))!)).state, 'killed');
    assert.equal((await killOnLostHost(w.core, (await w.core.store.getSandbox(id))!)).state, 'killed');
  }
  assert.deepEqual(await w.core.store.listSlots(w.core.hostId), []);
});

test("a fork reserves its children's memory and CPUs on the parent's host; too many is NO_HOST_CAPACITY naming it, nothing held", async () => {
  const w = await world();
  const parentMB = w.core.options.defaultMemoryMB;
  // Room for the parent and two children on this host; another host with plenty of room.
  await w.core.store.registerHost(host(w.core.hostId, { capacity: { memoryMB: parentMB * 3, cpus: 64, slots: 64 } }));
  await w.core.store.registerHost(host('host-b'));
  const parent = (await w.core.store.getSandbox((await createSandbox(w.core, {})).id))!;
  await assert.rejects(placeFork(w.core, parent, 3), (err: { code?: string; message?: string; details?: { hostId?: string } }) =>
    err.code === 'NO_HOST_CAPACITY' && err.details?.hostId === w.core.hostId && err.message!.includes(`host '${w.core.hostId}' has no room for 3 sandboxes`) && err.message!.includes('memory:'));
  const target = await placeFork(w.core, parent, 2);
  assert.equal(target.hostId, w.core.hostId, "the parent's host, never another");
  assert.deepEqual([target.reservation?.memoryMB, target.reservation?.cpus, target.reservation?.sandboxes], [parentMB * 2, parent.cpuCount * 2, 2]);
  // The host accepts it for 2 children, not for 3.
  assert.equal((await acceptPlacement(w.core, target.reservation!.id, 2)).id, target.reservation!.id);
  await assert.rejects(acceptPlacement(w.core, target.reservation!.id, 3), { code: 'PLACEMENT_INVALID' });
  await assert.rejects(placeFork(w.core, parent, 1), { code: 'NO_HOST_CAPACITY' }, 'held by the first fork until the host releases it');
  await w.core.store.releaseReservation(target.reservation!.id);
  await w.core.store.setHostState(w.core.hostId, 'draining');
  await assert.rejects(placeFork(w.core, parent, 1), (err: { code?: string; message?: string }) => err.code === 'NO_HOST_CAPACITY' && /is draining/.test(err.message!));
  await w.core.store.setHostState(w.core.hostId, 'gone');
  await assert.rejects(placeFork(w.core, parent, 1), { code: 'HOST_LOST' });
});
