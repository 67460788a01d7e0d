import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coalescingSender, concatBytes } from './coalescing-sender.js';

/** A send whose completion the test controls: each call waits until released. */
function gatedSend(): { sent: string[]; release: () => void; send: (b: Uint8Array) => Promise<void> } {
  const sent: string[] = [];
  let gates: Array<() => void> = [];
  return {
    sent,
    release: () => { const g = gates; gates = []; for (const open of g) open(); },
    send: (b) => {
      sent.push(Buffer.from(b).toString());
      return new Promise<void>((resolve) => gates.push(resolve));
    },
  };
}

test('one send in flight; what arrives meanwhile goes next as one merged send, in order', async () => {
  const gate = gatedSend();
  const sender = coalescingSender(gate.send, concatBytes, (err) => { throw err; });
  sender.push(Buffer.from('a'));
  sender.push(Buffer.from('b'));
  sender.push(Buffer.from('c'));
  assert.deepEqual(gate.sent, ['a']);
  gate.release();
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(gate.sent, ['a', 'bc']);
  gate.release();
  await sender.drained();
  sender.push(Buffer.from('d'));
  assert.deepEqual(gate.sent, ['a', 'bc', 'd']);
  gate.release();
  await sender.drained();
});

test('a failed send goes to onError and the next value is still sent; latest-wins merging', async () => {
  const errors: unknown[] = [];
  const sent: number[] = [];
  const sender = coalescingSender(async (n: number) => {
    sent.push(n);
    if (n === 1) throw new Error('boom');
  }, (_pending, next) => next, (err) => errors.push(err));
  sender.push(1);
  sender.push(2);
  sender.push(3);
  await sender.drained();
  assert.deepEqual(sent, [1, 3]);
  assert.equal(errors.length, 1);
});
