/**
 * Conformance cases: the host registry (leases on the database's clock, clock skew, drain states, heartbeats
 * after loss), placement reservations (capacity, preference for a cached image, a race of concurrent
 * placements that must never over-commit, a fork's N children reserved on one host) and the host-loss sweep.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HostRegistration, Store } from '@ramify/core';
import { sandbox, withStore, type StoreHarness } from './harness.js';

const registration = (id: string, overrides: Partial<HostRegistration> = {}): HostRegistration => ({
  id, url: `http://${id}.test:7423`, capacity: { memoryMB: 2048, cpus: 8, slots: 100 }, cachedImageIds: [], pendingUploadIds: [], hostNowMs: Date.now(), leaseMs: 10_000,
  maxClockSkewMs: 2000, ...overrides,
});
const heartbeat = { load: { runningSandboxes: 0, memoryReservedMB: 0 }, cachedImageIds: [], pendingUploadIds: [], leaseMs: 10_000 };
const place = (store: Store, id: string, memoryMB: number, extra: { hostId?: string; imageId?: string } = {}) =>
  store.reserveHost({ reservationId: id, memoryMB, cpus: 1, imageId: extra.imageId ?? null, ttlMs: 60_000, ...(extra.hostId ? { hostId: extra.hostId } : {}) });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function hostCases(h: StoreHarness): void {
  test('hosts: register on the database clock, heartbeat renews the lease, states, re-registration', async () => {
    await withStore(h, 'hosts_register', async (store) => {
      const before = await store.databaseNow();
      const a = await store.registerHost(registration('host-a', { cachedImageIds: ['snap_tpl'] }));
      assert.equal(a.state, 'active');
      assert.ok(a.leaseExpiresAt >= before + 10_000 && a.leaseExpiresAt <= (await store.databaseNow()) + 10_000);
      assert.deepEqual(a.capacity, { memoryMB: 2048, cpus: 8, slots: 100 });
      assert.deepEqual(a.cachedImageIds, ['snap_tpl']);
      assert.deepEqual([a.ingressAddress, a.sshAddress], [null, null]);
      await sleep(5);
      const b = await store.heartbeatHost('host-a', { ...heartbeat, load: { runningSandboxes: 2, memoryReservedMB: 1024 }, pendingUploadIds: ['snap_p'] });
      assert.ok(b.leaseExpiresAt > a.leaseExpiresAt);
      assert.deepEqual(b.load, { runningSandboxes: 2, memoryReservedMB: 1024 });
      assert.deepEqual(b.pendingUploadIds, ['snap_p']);
      assert.equal((await store.setHostState('host-a', 'draining')).state, 'draining');
      await assert.rejects(store.heartbeatHost('host-x', heartbeat), { code: 'HOST_NOT_FOUND' });
      await assert.rejects(store.setHostState('host-x', 'gone'), { code: 'HOST_NOT_FOUND' });
      await store.setHostState('host-a', 'gone');
      await assert.rejects(store.heartbeatHost('host-a', heartbeat), { code: 'HOST_LOST' });
      const moved = await store.registerHost(registration('host-a', { url: 'http://moved:1', ingressAddress: 'moved:7424', sshAddress: 'moved:2222' }));
      assert.deepEqual([moved.state, moved.ingressAddress, moved.sshAddress], ['active', 'moved:7424', 'moved:2222']);
      assert.deepEqual((await store.listHosts()).map((x) => [x.id, x.url, x.state]), [['host-a', 'http://moved:1', 'active']]);
      assert.equal(await store.getHost('host-x'), null);
    });
  });

  test('hosts: a clock more than the allowed skew off the database is refused with HOST_CLOCK_SKEW naming the skew', async () => {
    await withStore(h, 'hosts_skew', async (store) => {
      await assert.rejects(store.registerHost(registration('host-late', { hostNowMs: (await store.databaseNow()) - 5000 })), (err: { code?: string; message?: string; details?: { skewMs?: number } }) =>
        err.code === 'HOST_CLOCK_SKEW' && /behind the database's by \d+ ms/.test(err.message ?? '') && (err.details?.skewMs ?? 0) <= -4000);
      await assert.rejects(store.registerHost(registration('host-early', { hostNowMs: (await store.databaseNow()) + 3000 })), { code: 'HOST_CLOCK_SKEW' });
      assert.deepEqual(await store.listHosts(), []);
    });
  });

  test('placement: capacity counted from sandboxes and reservations, skips draining and expired hosts, prefers a cached image', async () => {
    await withStore(h, 'hosts_place', async (store) => {
      await store.registerHost(registration('host-a'));
      await store.registerHost(registration('host-b', { cachedImageIds: ['snap_tpl'] }));
      await store.registerHost(registration('host-c', { leaseMs: 1 }));
      await sleep(20);
      assert.equal((await place(store, 'r1', 512, { imageId: 'snap_tpl' })).hostId, 'host-b', 'the host caching the image');
      await store.insertSandbox(sandbox({ id: 'sbx_on_b', hostId: 'host-b', memoryMB: 1024 }));
      const r2 = await place(store, 'r2', 1024, { imageId: 'snap_tpl' });
      assert.equal(r2.hostId, 'host-a', 'b has 512 MiB left: a, though it does not cache the image');
      assert.equal(r2.url, 'http://host-a.test:7423');
      assert.equal((await store.getReservation('r2'))?.hostId, 'host-a');
      await assert.rejects(place(store, 'r3', 2048), (err: { code?: string; details?: { hosts?: number } }) => err.code === 'NO_HOST_CAPACITY' && err.details?.hosts === 2);
      await store.releaseReservation('r2');
      assert.equal(await store.getReservation('r2'), null);
      await store.setHostState('host-a', 'draining');
      await assert.rejects(place(store, 'r4', 1024), { code: 'NO_HOST_CAPACITY' }, 'a drains, b is full, c expired');
      assert.equal((await place(store, 'r5', 256, { hostId: 'host-b' })).hostId, 'host-b');
      await assert.rejects(place(store, 'r6', 512, { hostId: 'host-b' }), { code: 'NO_HOST_CAPACITY' });
    });
  });

  test('placement: a race of concurrent placements never over-commits a host', async () => {
    await withStore(h, 'hosts_race', async (store) => {
      await store.registerHost(registration('host-a', { capacity: { memoryMB: 2048, cpus: 64, slots: 100 } }));
      await store.registerHost(registration('host-b', { capacity: { memoryMB: 2048, cpus: 64, slots: 100 } }));
      // 12 placements of 512 MiB at once into 2 x 2048 MiB: exactly 8 fit.
      const results = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => place(store, `race_${i}`, 512)));
      const placed = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      const refused = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as { code?: string }).code] : []));
      assert.equal(placed.length, 8, `placed ${placed.length}, refused ${refused.join(',')}`);
      assert.deepEqual([...new Set(refused)], ['NO_HOST_CAPACITY']);
      for (const host of ['host-a', 'host-b']) assert.equal(placed.filter((p) => p.hostId === host).length, 4, host);
    }, { maxSlots: 4096 });
  });

  test('fork reservations: N children on one fixed host, counted as N sandboxes; too many refused naming the host and what is missing', async () => {
    await withStore(h, 'hosts_fork', async (store) => {
      // Room for 2 more children of 512 MiB: 2048 MiB, a 1024 MiB parent running on it.
      await store.registerHost(registration('host-a', { capacity: { memoryMB: 2048, cpus: 8, slots: 100 } }));
      await store.registerHost(registration('host-b'));
      await store.insertSandbox(sandbox({ id: 'sbx_parent', hostId: 'host-a', memoryMB: 1024 }));
      const fork = (id: string, count: number) => store.reserveHost({ reservationId: id, hostId: 'host-a', count, memoryMB: 512, cpus: 1, imageId: null, ttlMs: 60_000 });
      await assert.rejects(fork('f3', 3), (err: { code?: string; message?: string; details?: Record<string, unknown> }) =>
        err.code === 'NO_HOST_CAPACITY' && /host 'host-a' has no room for 3 sandboxes of 512 MiB/.test(err.message ?? '') && /memory: 1024 MiB free of 2048/.test(err.message ?? '') &&
        err.details?.hostId === 'host-a' && err.details?.sandboxes === 3 && JSON.stringify(err.details?.missing) === '["memory"]', 'host-b has room, but a fork may only go to host-a');
      assert.equal(await store.getReservation('f3'), null, 'nothing held by a refused fork');
      const two = await fork('f2', 2);
      assert.deepEqual([two.hostId, two.memoryMB, two.cpus, two.sandboxes], ['host-a', 1024, 2, 2]);
      assert.deepEqual(await store.getReservation('f2'), two);
      await assert.rejects(place(store, 'c1', 256, { hostId: 'host-a' }), { code: 'NO_HOST_CAPACITY' }, 'the fork holds the rest');
      // Slots are counted per child.
      await store.releaseReservation('f2');
      await store.registerHost(registration('host-s', { capacity: { memoryMB: 8192, cpus: 64, slots: 3 } }));
      await assert.rejects(store.reserveHost({ reservationId: 's4', hostId: 'host-s', count: 4, memoryMB: 64, cpus: 1, imageId: null, ttlMs: 60_000 }),
        (err: { details?: Record<string, unknown> }) => JSON.stringify(err.details?.missing) === '["network slots"]');
      await store.reserveHost({ reservationId: 's3', hostId: 'host-s', count: 3, memoryMB: 64, cpus: 1, imageId: null, ttlMs: 60_000 });
      await assert.rejects(place(store, 's1', 64, { hostId: 'host-s' }), { code: 'NO_HOST_CAPACITY' }, 'its 3 slots are held by one reservation');
      // A draining host takes no fork.
      await store.setHostState('host-b', 'draining');
      await assert.rejects(store.reserveHost({ reservationId: 'd1', hostId: 'host-b', count: 1, memoryMB: 64, cpus: 1, imageId: null, ttlMs: 60_000 }),
        (err: { code?: string; message?: string }) => err.code === 'NO_HOST_CAPACITY' && /host 'host-b' is draining/.test(err.message ?? ''));
    });
  });

  test('fork reservations: concurrent forks and creates on one host never over-commit it', async () => {
    await withStore(h, 'hosts_fork_race', async (store) => {
      await store.registerHost(registration('host-a', { capacity: { memoryMB: 4096, cpus: 64, slots: 100 } }));
      // 6 forks of 2 x 512 MiB and 4 creates of 512 MiB at once into 4096 MiB: 8 x 512 MiB fit, never more.
      const forks = Array.from({ length: 6 }, (_, i) => store.reserveHost({ reservationId: `fr_${i}`, hostId: 'host-a', count: 2, memoryMB: 512, cpus: 1, imageId: null, ttlMs: 60_000 }));
      const creates = Array.from({ length: 4 }, (_, i) => place(store, `cr_${i}`, 512));
      const results = await Promise.allSettled([...forks, ...creates]);
      const held = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.memoryMB] : [])).reduce((a, b) => a + b, 0);
      const refused = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as { code?: string }).code] : []));
      assert.ok(held <= 4096, `held ${held} MiB of 4096`);
      assert.ok(held >= 4096 - 512, `held ${held} MiB: room was left unused while placements were refused`);
      assert.deepEqual([...new Set(refused)], ['NO_HOST_CAPACITY']);
    }, { maxSlots: 4096 });
  });

  test('cluster secrets: made once by the first to ask, the same for every caller, concurrent ones included', async () => {
    await withStore(h, 'hosts_secret', async (store) => {
      const all = await Promise.all([store.clusterSecret('forwarding'), store.clusterSecret('forwarding'), store.clusterSecret('forwarding')]);
      assert.match(all[0]!, /^[0-9a-f]{64}$/);
      assert.deepEqual(new Set(all).size, 1);
      assert.equal(await store.clusterSecret('forwarding'), all[0]);
      assert.notEqual(await store.clusterSecret('other'), all[0], 'one secret per name');
    });
  });

  test('host loss: an expired lease makes the host gone and its running sandboxes error HOST_LOST; paused ones stay', async () => {
    await withStore(h, 'hosts_loss', async (store) => {
      await store.registerHost(registration('host-a', { leaseMs: 1 }));
      await store.registerHost(registration('host-b'));
      await store.insertSandbox(sandbox({ id: 'sbx_run', hostId: 'host-a' }));
      await store.insertSandbox(sandbox({ id: 'sbx_paused', hostId: 'host-a', state: 'paused', pausedSnapshotId: 'snap_p' }));
      await store.insertSandbox(sandbox({ id: 'sbx_other', hostId: 'host-b' }));
      await place(store, 'r_a', 128, { hostId: 'host-a' }).catch(() => undefined);
      await sleep(20);
      const lost = await store.expireHosts();
      assert.deepEqual(lost, [{ hostId: 'host-a', lostSandboxIds: ['sbx_run'], previousStates: { sbx_run: 'running' } }]);
      const run = await store.getSandbox('sbx_run');
      assert.equal(run?.state, 'error');
      assert.match(run?.error ?? '', /^HOST_LOST: host 'host-a' stopped heartbeating/);
      assert.equal((await store.getSandbox('sbx_paused'))?.state, 'paused');
      assert.equal((await store.getSandbox('sbx_other'))?.state, 'running');
      assert.equal((await store.getHost('host-a'))?.state, 'gone');
      assert.deepEqual(await store.expireHosts(), [], 'nothing twice');
      await assert.rejects(store.heartbeatHost('host-a', heartbeat), { code: 'HOST_LOST' });
      // Two sweepers at once: each lost host is written off once.
      await store.registerHost(registration('host-c', { leaseMs: 1 }));
      await sleep(20);
      const both = (await Promise.all([store.expireHosts(), store.expireHosts()])).flat();
      assert.deepEqual(both.map((l) => l.hostId), ['host-c']);
    });
  });
}
