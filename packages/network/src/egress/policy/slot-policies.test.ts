import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseEgressPolicy } from '@ramify/core';
import { DEFAULT_LAYOUT, slotAddresses } from '../../slots.js';
import { SlotPolicies, type SlotPolicyReader } from './slot-policies.js';

const OPEN = parseEgressPolicy([]);
const PYPI = parseEgressPolicy(['pypi.org']);
const later = (ms: number): number => Date.now() + ms;

test('SlotPolicies: a slot is found by number, by its slot address and by its sandbox; delete forgets it', () => {
  const slots = new SlotPolicies(DEFAULT_LAYOUT);
  const reader: SlotPolicyReader = slots;
  slots.set({ sandboxId: 'sbx_a', slot: 5, policy: PYPI });
  const address = slotAddresses(DEFAULT_LAYOUT, 5).slotAddress;
  assert.equal(slots.addressOf(5), address);
  for (const view of [reader.slotByNumber(5), reader.slotByAddress(address), reader.slotOfSandbox('sbx_a')]) {
    assert.deepEqual(view && { sandboxId: view.sandboxId, slot: view.slot, slotAddress: view.slotAddress, policy: view.policy }, { sandboxId: 'sbx_a', slot: 5, slotAddress: address, policy: PYPI });
  }
  assert.equal(reader.slotByNumber(6), null);
  assert.equal(reader.slotByAddress(slotAddresses(DEFAULT_LAYOUT, 6).slotAddress), null);
  assert.equal(reader.slotOfSandbox('sbx_b'), null);
  slots.delete(5);
  slots.delete(5);
  assert.deepEqual([reader.slotByNumber(5), reader.slotByAddress(address), reader.slotOfSandbox('sbx_a')], [null, null, null]);
});

test('SlotPolicies: learned names are newest first and expire; kept when the same sandbox keeps the slot, not otherwise', () => {
  const slots = new SlotPolicies(DEFAULT_LAYOUT);
  slots.set({ sandboxId: 'sbx_a', slot: 1, policy: PYPI });
  slots.learn(1, 'pypi.org', ['198.51.100.1'], later(60_000));
  slots.learn(1, 'files.pypi.org', ['198.51.100.1', '198.51.100.2'], later(120_000));
  slots.learn(1, 'gone.pypi.org', ['198.51.100.1'], Date.now() - 1);
  slots.learn(7, 'nobody.test', ['198.51.100.9'], later(60_000)); // no policy on slot 7: nothing recorded
  assert.equal(slots.slotByNumber(7), null);
  assert.deepEqual(slots.slotByNumber(1)?.namesFor('198.51.100.1'), ['files.pypi.org', 'pypi.org']);
  assert.deepEqual(slots.slotByNumber(1)?.namesFor('198.51.100.3'), []);
  slots.set({ sandboxId: 'sbx_a', slot: 1, policy: OPEN });
  assert.equal(slots.slotByNumber(1)?.policy, OPEN);
  assert.deepEqual(slots.slotByNumber(1)?.namesFor('198.51.100.2'), ['files.pypi.org'], 'same sandbox: names kept');
  slots.set({ sandboxId: 'sbx_b', slot: 1, policy: OPEN });
  assert.deepEqual(slots.slotByNumber(1)?.namesFor('198.51.100.2'), [], 'another sandbox: names forgotten');
  assert.equal(slots.slotOfSandbox('sbx_a'), null);
  slots.learn(1, 'pypi.org', ['198.51.100.1'], later(60_000));
  slots.forgetLearned();
  assert.deepEqual(slots.slotByNumber(1)?.namesFor('198.51.100.1'), []);
});

test('SlotPolicies.replaceAll: exactly the given slots, no learned names', () => {
  const slots = new SlotPolicies(DEFAULT_LAYOUT);
  slots.set({ sandboxId: 'sbx_a', slot: 0, policy: PYPI });
  slots.set({ sandboxId: 'sbx_b', slot: 1, policy: OPEN });
  slots.learn(1, 'pypi.org', ['198.51.100.1'], later(60_000));
  slots.replaceAll([{ sandboxId: 'sbx_b', slot: 1, policy: PYPI }, { sandboxId: 'sbx_c', slot: 2, policy: OPEN }]);
  assert.equal(slots.slotByNumber(0), null);
  assert.equal(slots.slotByAddress(slots.addressOf(0)), null);
  assert.equal(slots.slotOfSandbox('sbx_b')?.policy, PYPI);
  assert.deepEqual(slots.slotByNumber(1)?.namesFor('198.51.100.1'), []);
  assert.equal(slots.slotByAddress(slots.addressOf(2))?.sandboxId, 'sbx_c');
});
