/** Warm network slots (fake runtime and network; the real namespaces are covered by @ramify/network). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestWorld } from '../testing/world.js';
import { createSandbox } from './create.js';
import { killSandbox } from './kill.js';
import { forkSandbox } from './fork.js';
import { bringUpsInFlight } from './bring-ups-in-flight.js';

/** Prewarming runs in the background: poll until `check` holds (10 s at most), so a slow machine cannot fail the test. */
async function eventually(check: () => boolean | Promise<boolean>): Promise<void> {
  for (const deadline = Date.now() + 10_000; !(await check()) && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 10));
}

test('creating a sandbox prewarms the next free slots; a killed sandbox keeps its namespaces when its slot is next in line', async () => {
  const w = await createTestWorld({ prewarmSlots: 3 });
  const a = await createSandbox(w.core, {});
  await eventually(() => w.network.prewarmed.length > 0);
  assert.deepEqual(w.network.prewarmed.at(-1), [2, 3, 4], 'slot 1 is taken: the next three free slots are prepared');
  const b = await createSandbox(w.core, {});
  await killSandbox(w.core, a.id);
  assert.ok(w.network.attached.has(a.slot as number), 'slot 1 is the next to hand out: its namespaces stay');
  assert.ok(!w.network.calls.includes(`detach ${a.slot}`));
  assert.ok(w.network.calls.includes(`prepareGuest ${a.slot}`), 'the kept slot gets its guest address back before it is handed out again');
  assert.deepEqual((await w.store.listSlots('host-test')).map((l) => l.sandboxId), [b.id], 'the lease itself is released');
  await w.dispose();
});

test('with prewarmSlots 0 every released slot is torn down', async () => {
  const w = await createTestWorld({ prewarmSlots: 0 });
  const a = await createSandbox(w.core, {});
  await killSandbox(w.core, a.id);
  assert.ok(w.network.calls.includes(`detach ${a.slot}`));
  assert.deepEqual(w.network.prewarmed, []);
  await w.dispose();
});

test('the pool shrinks: idle slots outside the lowest free ones are torn down once unleased', async () => {
  const w = await createTestWorld({ prewarmSlots: 2 });
  const sandboxes = [];
  for (let i = 0; i < 4; i++) sandboxes.push(await createSandbox(w.core, {}));
  for (const s of sandboxes) await killSandbox(w.core, s.id);
  await eventually(async () => (await w.network.listSlots()).length <= 2);
  assert.deepEqual((await w.network.listSlots()).sort(), [1, 2], 'only the two-slot pool is left');
  await w.dispose();
});

test('while sandboxes are being brought up (a fork), slot prewarming waits for the last one to end', async () => {
  const w = await createTestWorld({ prewarmSlots: 4 });
  const parent = await createSandbox(w.core, {});
  await eventually(() => w.network.prewarmed.length > 0);
  const inFlightAtPrewarm: number[] = [];
  const prewarm = w.network.prewarm.bind(w.network);
  w.network.prewarm = (slots: number[]): void => {
    inFlightAtPrewarm.push(bringUpsInFlight.get(w.core) ?? 0);
    prewarm(slots);
  };
  const children = await forkSandbox(w.core, parent.id, { count: 3 });
  await eventually(() => inFlightAtPrewarm.length > 0);
  assert.ok(inFlightAtPrewarm.length > 0, 'the slots the children took are replaced');
  assert.deepEqual(inFlightAtPrewarm.filter((n) => n > 0), [], 'never while a child was being restored');
  const taken = new Set([parent.slot, ...children.map((c) => c.slot)]);
  await eventually(() => (w.network.prewarmed.at(-1) ?? []).every((slot) => !taken.has(slot)));
  assert.ok((w.network.prewarmed.at(-1) ?? []).every((slot) => !taken.has(slot)), 'the next free slots are prepared afterwards');
  await w.dispose();
});
