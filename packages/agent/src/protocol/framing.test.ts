import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { encode } from '@msgpack/msgpack';
import { encodeFrame, FrameDecoder, FramingError, MAX_FRAME_BYTES } from './framing.js';

test('frames survive any chunking: byte by byte, many per chunk, split headers', () => {
  const messages = [
    { t: 'req', id: 1, m: 'ping', p: {} },
    { t: 'out', sub: 2, fd: 1, off: 0, data: randomBytes(70_000) },
    { t: 'res', id: 1, r: { text: 'héllo € 𝄞' } },
    { t: 'end', sid: 3 },
  ];
  const wire = Buffer.concat(messages.map((m) => encodeFrame(m)));
  for (const step of [1, 3, 4, 5, 1000, 65_536, wire.length]) {
    const dec = new FrameDecoder();
    const got: unknown[] = [];
    for (let i = 0; i < wire.length; i += step) got.push(...dec.push(wire.subarray(i, i + step)));
    assert.equal(got.length, messages.length, `step ${step}`);
    assert.deepEqual(Buffer.from((got[1] as { data: Uint8Array }).data), messages[1].data);
    assert.deepEqual(got[2], messages[2]);
    assert.equal(dec.pendingBytes, 0);
  }
});

test('binary payloads are msgpack bin, not base64 or arrays', () => {
  const data = new Uint8Array([0, 1, 2, 255]);
  const frame = encodeFrame({ data });
  const body = frame.subarray(4);
  assert.equal(frame.readUInt32BE(0), body.length);
  // fixmap(1) "data" bin8(4) ...
  assert.deepEqual([...body.subarray(0, 8)], [0x81, 0xa4, 0x64, 0x61, 0x74, 0x61, 0xc4, 4]);
  const [decoded] = new FrameDecoder().push(frame) as Array<{ data: Uint8Array }>;
  assert.ok(decoded.data instanceof Uint8Array);
  assert.deepEqual([...decoded.data], [0, 1, 2, 255]);
});

test('undefined fields are omitted', () => {
  const [decoded] = new FrameDecoder().push(encodeFrame({ a: 1, b: undefined })) as object[];
  assert.deepEqual(Object.keys(decoded), ['a']);
});

test('an oversized or garbage frame is a FramingError', () => {
  const header = Buffer.alloc(4);
  header.writeUInt32BE(MAX_FRAME_BYTES + 1);
  assert.throws(() => new FrameDecoder().push(header), FramingError);
  const garbage = Buffer.from([0, 0, 0, 1, 0xc1]); // 0xc1 is never used in msgpack
  assert.throws(() => new FrameDecoder().push(garbage), FramingError);
  assert.ok(encode({}).length > 0);
});
