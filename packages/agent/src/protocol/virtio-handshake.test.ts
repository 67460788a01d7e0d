import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { encodeMarker, MARKER_BYTES, MarkerScanner, parseMarker } from './virtio-handshake.js';

test('markers encode and parse; a nonce of the wrong size is refused', () => {
  const nonce = randomBytes(8);
  const hello = encodeMarker('hello', nonce);
  assert.equal(hello.length, MARKER_BYTES);
  assert.equal(hello.readUInt32BE(0), 0xffffffff);
  assert.deepEqual(parseMarker(hello), { kind: 'hello', nonce });
  assert.deepEqual(parseMarker(encodeMarker('ack', nonce)), { kind: 'ack', nonce });
  assert.equal(parseMarker(Buffer.alloc(16)), undefined);
  assert.equal(parseMarker(hello.subarray(0, 15)), undefined);
  assert.throws(() => encodeMarker('hello', randomBytes(7)), RangeError);
});

test('the scanner finds a marker however the stream is cut, after any junk, and returns what follows', () => {
  const nonce = randomBytes(8);
  const junk = Buffer.concat([randomBytes(100), Buffer.from([0xff, 0xff, 0xff, 0xff, 0x52, 0x4d]), encodeMarker('hello', randomBytes(8)), Buffer.from([0xff, 0xff])]);
  const after = Buffer.from('first frame bytes');
  const stream = Buffer.concat([junk, encodeMarker('ack', nonce), after]);
  for (let cut1 = 0; cut1 <= stream.length; cut1 += 3) {
    for (const cut2 of [cut1, Math.min(stream.length, cut1 + 1), Math.min(stream.length, cut1 + 9)]) {
      const scanner = new MarkerScanner('ack', nonce);
      const pieces = [stream.subarray(0, cut1), stream.subarray(cut1, cut2), stream.subarray(cut2)];
      let found: { nonce: Buffer; rest: Buffer } | undefined;
      const rest: Buffer[] = [];
      for (const piece of pieces) {
        if (found) rest.push(piece);
        else found = scanner.push(piece);
        if (found && rest.length === 0) rest.push(found.rest);
      }
      assert.ok(found, `found with cuts at ${cut1}/${cut2}`);
      assert.deepEqual(found.nonce, nonce);
      assert.deepEqual(Buffer.concat(rest), after, `rest with cuts at ${cut1}/${cut2}`);
    }
  }
});

test('a scanner for one nonce skips markers with other nonces and of the other kind', () => {
  const mine = randomBytes(8);
  const scanner = new MarkerScanner('ack', mine);
  assert.equal(scanner.push(encodeMarker('ack', randomBytes(8))), undefined);
  assert.equal(scanner.push(encodeMarker('hello', mine)), undefined);
  assert.deepEqual(scanner.push(encodeMarker('ack', mine))?.nonce, mine);
  const any = new MarkerScanner('hello');
  assert.deepEqual(any.push(Buffer.concat([encodeMarker('ack', mine), encodeMarker('hello', mine)]))?.nonce, mine);
});
