/**
 * Idle auto-pause in core: a sandbox with `autoPause` is paused once idle for `idleMs` (no touch, no hold,
 * CPU under the threshold), not while something is open on it or its CPU is busy, never without
 * `autoPause`; a blocked checkpoint leaves it running and is retried after `timeoutRetryMs`; the setting
 * is validated, stored, live, copied to forks and recorded with named snapshots (a sandbox created from
 * one starts with it unless the request gives its own); the idle clock across a daemon restart: the
 * activity persister writes last-use times in batches (not per touch) and once more when stopped, a start
 * or resume is stored with its state, a new core over the same store continues each sandbox's idle time
 * from the stored figure and judges CPU from its second reading on (the usage sampler's). FAKE runtime (its CPU figure set by
 * the test), real SQLite store, manual clock.
 */
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from '../lifecycle/create.js';
import { forkSandbox } from '../lifecycle/fork.js';
import { getSandbox } from '../lifecycle/get.js';
import { killSandbox } from '../lifecycle/kill.js';
import { pauseSandbox } from '../lifecycle/pause.js';
import { resumeSandbox } from '../lifecycle/resume.js';
import { toSandboxInfo, toSnapshotInfo } from '../lifecycle/records.js';
import { snapshotSandbox } from '../lifecycle/snapshot.js';
import { UsageSampler } from '../usage/sampler.js';
import { AutoPauseScheduler } from './auto-pause.js';
import { ActivityPersister } from './persist-activity.js';
import { setAutoPause } from './set-auto-pause.js';

let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld();
});
afterEach(async () => {
  await w.dispose();
});

/**
 * The auto-pause scheduler with the usage sampler (where its CPU figure comes from) run before each of its
 * sweeps, as `serve` runs both on their timers: here one sample per sweep.
 */
function sampledScheduler(): { sweep(): Promise<void> } {
  const autoPause = new AutoPauseScheduler(w.core);
  const sampler = new UsageSampler(w.core);
  return { sweep: async () => { await sampler.sweep(); await autoPause.sweep(); } };
}

const state = async (id: string): Promise<string> => (await getSandbox(w.core, id)).state;
const stored = async (id: string): Promise<number | null | undefined> => (await w.store.getSandbox(id))?.lastActiveAt;

test('an idle sandbox is paused after idleMs; one without autoPause is not', async () => {
  const idle = await createSandbox(w.core, { autoPause: { idleMs: 60_000 } });
  const plain = await createSandbox(w.core, {});
  assert.deepEqual(toSandboxInfo(idle).autoPause, { idleMs: 60_000 });
  assert.equal(toSandboxInfo(plain).autoPause, null);
  const scheduler = sampledScheduler();
  await scheduler.sweep();
  w.clock.advance(59_000);
  await scheduler.sweep();
  assert.equal(await state(idle.id), 'running', 'not yet idle long enough');
  w.clock.advance(1_000);
  await scheduler.sweep();
  assert.equal(await state(idle.id), 'paused');
  assert.equal(await state(plain.id), 'running');
  // Resumed (an API call): idle time starts again.
  await resumeSandbox(w.core, idle.id);
  w.clock.advance(30_000);
  await scheduler.sweep();
  assert.equal(await state(idle.id), 'running');
});

test('a touch, an open hold (stream, ingress connection) or busy CPU keeps it running', async () => {
  const sbx = await createSandbox(w.core, { autoPause: { idleMs: 10_000 } });
  const scheduler = sampledScheduler();
  // An API call halfway restarts the idle time.
  w.clock.advance(6_000);
  w.core.activity.touch(sbx.id);
  w.clock.advance(6_000);
  await scheduler.sweep();
  assert.equal(await state(sbx.id), 'running', 'touched 6 s ago');
  // Something open (a stream, a WebSocket through the ingress) for longer than idleMs.
  const release = w.core.activity.hold(sbx.id);
  w.clock.advance(60_000);
  await scheduler.sweep();
  assert.equal(await state(sbx.id), 'running', 'held open');
  release();
  release(); // a second release does nothing
  assert.equal(w.core.activity.openCount(sbx.id), 0);
  // A busy background job: 0.5 cores between every two sweeps.
  let cpuUs = 0;
  for (let i = 0; i < 15; i++) {
    cpuUs += 500_000;
    w.runtime.cpuUs.set(sbx.id, cpuUs);
    w.clock.advance(1_000);
    await scheduler.sweep();
  }
  assert.equal(await state(sbx.id), 'running', 'a busy sandbox is not idle');
  // The job ends: CPU flat from now on, idle after idleMs.
  for (let i = 0; i < 11; i++) {
    w.clock.advance(1_000);
    await scheduler.sweep();
  }
  assert.equal(await state(sbx.id), 'paused');
});

test('CPU under the threshold is idle', async () => {
  const sbx = await createSandbox(w.core, { autoPause: { idleMs: 10_000 } });
  const scheduler = sampledScheduler();
  let cpuUs = 0;
  for (let i = 0; i < 12; i++) {
    cpuUs += 40_000; // 0.04 cores
    w.runtime.cpuUs.set(sbx.id, cpuUs);
    w.clock.advance(1_000);
    await scheduler.sweep();
  }
  assert.equal(await state(sbx.id), 'paused');
});

test('a blocked checkpoint leaves it running and is retried after timeoutRetryMs; never killed', async () => {
  const sbx = await createSandbox(w.core, { autoPause: { idleMs: 10_000 } });
  const guest = w.runtime.guest(sbx.id);
  guest.endpoints.push('10.0.0.2:9 -> 1.2.3.4:443 ESTABLISHED');
  const scheduler = sampledScheduler();
  await scheduler.sweep();
  w.clock.advance(10_000);
  await scheduler.sweep();
  assert.equal(await state(sbx.id), 'running', 'CHECKPOINT_BLOCKED: still running');
  guest.endpoints.length = 0;
  await scheduler.sweep();
  assert.equal(await state(sbx.id), 'running', 'not retried before timeoutRetryMs');
  w.clock.advance(w.core.options.timeoutRetryMs);
  await scheduler.sweep();
  assert.equal(await state(sbx.id), 'paused');
});

test('the setting: validated, live, off with null, copied to forks, refused on a killed sandbox', async () => {
  for (const idleMs of [0, 9_999, 86_400_001, 1.5]) {
    await assert.rejects(createSandbox(w.core, { autoPause: { idleMs } }), { code: 'VALIDATION_FAILED' });
  }
  const sbx = await createSandbox(w.core, {});
  await assert.rejects(setAutoPause(w.core, sbx.id, { idleMs: 5 }), {
    code: 'VALIDATION_FAILED',
    message: 'body.autoPause.idleMs: must be an idle time, an integer from 10000 to 86400000 ms, got 5',
    details: { field: 'autoPause.idleMs', issues: [{ path: 'body.autoPause.idleMs', message: 'must be an idle time, an integer from 10000 to 86400000 ms, got 5' }] },
  });
  await assert.rejects(createSandbox(w.core, { autoPause: { idleMs: 'soon' as unknown as number } }), {
    details: { field: 'autoPause.idleMs', issues: [{ path: 'body.autoPause.idleMs', message: "must be an idle time, an integer from 10000 to 86400000 ms, got 'soon'" }] },
  });
  assert.equal((await getSandbox(w.core, sbx.id)).autoPause, null, 'nothing stored by a refused call');
  const scheduler = sampledScheduler();
  w.clock.advance(100_000);
  await scheduler.sweep();
  assert.equal(await state(sbx.id), 'running');
  await setAutoPause(w.core, sbx.id, { idleMs: 20_000 });
  const forks = await forkSandbox(w.core, sbx.id, { count: 1 });
  assert.deepEqual(forks[0]?.autoPause, { idleMs: 20_000 }, 'a fork copies it');
  w.clock.advance(10_000);
  await scheduler.sweep();
  assert.equal(await state(sbx.id), 'running', 'turning it on started the idle time afresh');
  await setAutoPause(w.core, sbx.id, null);
  w.clock.advance(100_000);
  await scheduler.sweep();
  assert.equal(await state(sbx.id), 'running', 'off again');
  await killSandbox(w.core, sbx.id);
  await assert.rejects(setAutoPause(w.core, sbx.id, { idleMs: 20_000 }), { code: 'SANDBOX_NOT_FOUND' });
});

test('a named snapshot records autoPause; a sandbox from it starts with it unless the create gives its own', async () => {
  const sbx = await createSandbox(w.core, { autoPause: { idleMs: 20_000 } });
  const running = await snapshotSandbox(w.core, sbx.id, { name: 'idle-20s' });
  assert.deepEqual(toSnapshotInfo(running).autoPause, { idleMs: 20_000 });
  // A paused sandbox's pause image named later records the setting as it is when named.
  await pauseSandbox(w.core, sbx.id);
  await setAutoPause(w.core, sbx.id, { idleMs: 30_000 });
  assert.deepEqual((await snapshotSandbox(w.core, sbx.id, { name: 'idle-30s' })).autoPause, { idleMs: 30_000 });
  const plain = await createSandbox(w.core, {});
  assert.equal((await snapshotSandbox(w.core, plain.id, { name: 'never-idle' })).autoPause, null);

  const fromSnapshot = await createSandbox(w.core, { snapshot: 'idle-20s' });
  assert.deepEqual(fromSnapshot.autoPause, { idleMs: 20_000 });
  assert.deepEqual((await createSandbox(w.core, { snapshot: 'idle-30s' })).autoPause, { idleMs: 30_000 });
  assert.deepEqual((await createSandbox(w.core, { snapshot: 'idle-20s', autoPause: { idleMs: 60_000 } })).autoPause, { idleMs: 60_000 }, "the request's own wins");
  assert.equal((await createSandbox(w.core, { snapshot: 'idle-20s', autoPause: null })).autoPause, null, 'null turns it off');
  assert.equal((await createSandbox(w.core, { snapshot: 'never-idle' })).autoPause, null);
  await assert.rejects(createSandbox(w.core, { snapshot: 'idle-20s', autoPause: { idleMs: 5 } }), { code: 'VALIDATION_FAILED' });
  // The recorded setting is the sandbox's: the scheduler pauses it.
  const scheduler = sampledScheduler();
  await scheduler.sweep();
  w.clock.advance(20_000);
  await scheduler.sweep();
  assert.equal(await state(fromSnapshot.id), 'paused');
});

/** A daemon restart: the old core's store closed, a new core over the same files, runtime and clock. */
async function restart(): Promise<void> {
  await w.close();
  w = await createTestWorld({}, w);
}

test('touches are written in batches by the persister, not one by one; an open hold is written as use now', async () => {
  const sbx = await createSandbox(w.core, { autoPause: { idleMs: 60_000 } });
  const createdAt = w.clock.now();
  assert.equal(await stored(sbx.id), createdAt, 'the start is stored with its state');
  const persister = new ActivityPersister(w.core);
  for (let i = 0; i < 5; i++) {
    w.clock.advance(1_000);
    w.core.activity.touch(sbx.id);
  }
  assert.equal(await stored(sbx.id), createdAt, 'no write per touch');
  await persister.sweep();
  assert.equal(await stored(sbx.id), createdAt + 5_000, 'the last touch, written once');
  const release = w.core.activity.hold(sbx.id);
  w.clock.advance(30_000);
  await persister.sweep();
  assert.equal(await stored(sbx.id), w.clock.now(), 'held open: in use at the write');
  release();
  // A resume is stored with its state change, without waiting for the persister.
  await pauseSandbox(w.core, sbx.id);
  w.clock.advance(100_000);
  await resumeSandbox(w.core, sbx.id);
  assert.equal(await stored(sbx.id), w.clock.now());
});

test('after a restart the idle clock continues from the last use before it, not from the restart', async () => {
  const sbx = await createSandbox(w.core, { autoPause: { idleMs: 60_000 } });
  const persister = new ActivityPersister(w.core);
  w.clock.advance(30_000);
  w.core.activity.touch(sbx.id); // an API call at 30 s
  w.clock.advance(10_000);
  await persister.stop(); // the daemon's shutdown writes it
  await restart();
  const scheduler = sampledScheduler();
  await scheduler.sweep();
  w.clock.advance(49_000);
  await scheduler.sweep();
  assert.equal(await state(sbx.id), 'running', 'idle 59 s since the call (49 s since the restart)');
  w.clock.advance(1_000);
  await scheduler.sweep();
  assert.equal(await state(sbx.id), 'paused', 'idle 60 s since the call: paused 20 s after the restart');
});

test('a crash loses only the touches since the last periodic write', async () => {
  const sbx = await createSandbox(w.core, { autoPause: { idleMs: 60_000 } });
  const persister = new ActivityPersister(w.core);
  w.clock.advance(30_000);
  w.core.activity.touch(sbx.id);
  await persister.sweep(); // the periodic write: 30 s
  w.clock.advance(5_000);
  w.core.activity.touch(sbx.id); // 35 s, never written
  w.clock.advance(5_000);
  await restart(); // no stop: a crash
  assert.equal(await stored(sbx.id), 30_000 + (await getSandbox(w.core, sbx.id)).createdAt);
  const scheduler = sampledScheduler();
  await scheduler.sweep();
  w.clock.advance(49_000);
  await scheduler.sweep();
  assert.equal(await state(sbx.id), 'running');
  w.clock.advance(1_000);
  await scheduler.sweep();
  assert.equal(await state(sbx.id), 'paused', 'idle 60 s since the last written use');
});

test('after a restart a long-idle but busy sandbox is not paused: CPU is judged before idle time', async () => {
  const sbx = await createSandbox(w.core, { autoPause: { idleMs: 10_000 } });
  w.clock.advance(100_000);
  await restart();
  const scheduler = sampledScheduler();
  let cpuUs = 1_000_000;
  w.runtime.cpuUs.set(sbx.id, cpuUs);
  await scheduler.sweep();
  assert.equal(await state(sbx.id), 'running', 'first CPU reading: no rate yet, not judged');
  for (let i = 0; i < 5; i++) {
    cpuUs += 500_000;
    w.runtime.cpuUs.set(sbx.id, cpuUs);
    w.clock.advance(1_000);
    await scheduler.sweep();
  }
  assert.equal(await state(sbx.id), 'running', 'busy: 0.5 cores');
  w.clock.advance(10_000);
  await scheduler.sweep();
  assert.equal(await state(sbx.id), 'paused', 'then idle for idleMs');
});
