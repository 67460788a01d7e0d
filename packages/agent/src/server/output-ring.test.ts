import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OutputRing } from './output-ring.js';

function readAll(ring: OutputRing, from: number): Buffer {
  const parts: Buffer[] = [];
  let off = from;
  for (;;) {
    const b = ring.read(off, 10_000);
    if (b.length === 0) break;
    parts.push(Buffer.from(b));
    off += b.length;
  }
  return Buffer.concat(parts);
}

test('keeps the last capacity bytes with absolute offsets', () => {
  const ring = new OutputRing(100_000);
  const all: Buffer[] = [];
  for (let i = 0; i < 5000; i++) {
    const chunk = Buffer.from(`line ${i} ${'x'.repeat(i % 50)}\n`);
    all.push(chunk);
    ring.append(chunk);
  }
  const whole = Buffer.concat(all);
  assert.equal(ring.end, whole.length);
  assert.equal(ring.start, whole.length - 100_000);
  assert.equal(ring.heldBytes, 100_000);
  assert.deepEqual(readAll(ring, ring.start), whole.subarray(ring.start));
  assert.deepEqual(readAll(ring, whole.length - 10), whole.subarray(whole.length - 10));
  assert.throws(() => ring.read(ring.start - 1, 10), RangeError);
  assert.equal(ring.read(ring.end, 10).length, 0);
});

test('large single appends and block boundaries', () => {
  const ring = new OutputRing(1 << 20);
  const big = Buffer.alloc(3 * 65536 + 17, 7);
  big[65536] = 1;
  ring.append(big);
  assert.equal(ring.end, big.length);
  assert.deepEqual(readAll(ring, 0), big);
  assert.equal(ring.read(65536, 1)[0], 1);
});

test('clear drops what is held but offsets keep counting', () => {
  const ring = new OutputRing(1000);
  ring.append(Buffer.from('abc'));
  ring.clear();
  assert.equal(ring.start, 3);
  assert.equal(ring.heldBytes, 0);
  ring.append(Buffer.from('def'));
  assert.equal(readAll(ring, 3).toString(), 'def');
});
