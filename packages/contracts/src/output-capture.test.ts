/** Unit tests of the result capture: the limit, the counts, and cuts that never split a UTF-8 character. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ResultCapture, StreamCapture, incompleteUtf8Tail } from './output-capture.js';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

/** Capture `input` with `limit`, one chunk per byte when `bytewise`. */
function capture(input: Uint8Array, limit: number, bytewise = false): StreamCapture {
  const c = new StreamCapture(limit);
  if (bytewise) for (const b of input) c.push(Uint8Array.of(b));
  else c.push(input);
  c.end();
  return c;
}

describe('StreamCapture', () => {
  test('under the limit: everything, not truncated', () => {
    const c = capture(bytes('hello\n'), 64);
    assert.equal(c.text, 'hello\n');
    assert.deepEqual(c.counts(), { keptBytes: 6, totalBytes: 6 });
    assert.equal(c.truncated, false);
  });

  test('exactly the limit is not a cut', () => {
    const c = capture(bytes('héllo'), 6);
    assert.equal(c.text, 'héllo');
    assert.equal(c.truncated, false);
    assert.deepEqual(c.counts(), { keptBytes: 6, totalBytes: 6 });
  });

  test('over the limit: the head, the counts, truncated', () => {
    const c = capture(bytes('abcdefghij'), 4);
    assert.equal(c.text, 'abcd');
    assert.equal(c.truncated, true);
    assert.deepEqual(c.counts(), { keptBytes: 4, totalBytes: 10 });
  });

  test('a cut inside a multi-byte character leaves the whole character out, whatever the chunking', () => {
    // 'a€😀b': a(1) €(3) 😀(4) b(1) = 9 bytes.
    const input = bytes('a€😀b');
    const expected: Array<[number, string]> = [[0, ''], [1, 'a'], [2, 'a'], [3, 'a'], [4, 'a€'], [5, 'a€'], [6, 'a€'], [7, 'a€'], [8, 'a€😀']];
    for (const bytewise of [false, true]) {
      for (const [limit, text] of expected) {
        const c = capture(input, limit, bytewise);
        assert.equal(c.text, text, `limit ${limit}, bytewise ${bytewise}`);
        assert.equal(c.keptBytes, Buffer.byteLength(text), `limit ${limit}, bytewise ${bytewise}`);
        assert.equal(c.totalBytes, 9);
        assert.equal(c.truncated, true);
        assert.ok(!c.text.includes('\uFFFD'));
      }
    }
  });

  test('bytes that are not UTF-8 decode as U+FFFD and count as the process wrote them', () => {
    const c = capture(Uint8Array.of(0x61, 0xff, 0x62, 0xc3), 3);
    assert.equal(c.text, 'a\uFFFDb');
    assert.deepEqual(c.counts(), { keptBytes: 3, totalBytes: 4 });
    // A stream that ends inside a character, uncut: the process wrote half a character.
    const half = capture(Uint8Array.of(0x61, 0xe2, 0x82), 10);
    assert.equal(half.text, 'a\uFFFD');
    assert.deepEqual(half.counts(), { keptBytes: 3, totalBytes: 3 });
  });

  test('before the end, the text and kept count leave out a character still incomplete', () => {
    const c = new StreamCapture(100);
    c.push(Uint8Array.of(0x61, 0xe2, 0x82));
    assert.equal(c.text, 'a');
    assert.equal(c.keptBytes, 1);
    c.push(Uint8Array.of(0xac));
    assert.equal(c.text, 'a€');
    assert.equal(c.keptBytes, 4);
  });

  test('limit 0 keeps nothing but counts', () => {
    const c = capture(bytes('xyz'), 0);
    assert.equal(c.text, '');
    assert.deepEqual(c.counts(), { keptBytes: 0, totalBytes: 3 });
    assert.equal(c.truncated, true);
  });
});

describe('incompleteUtf8Tail', () => {
  test('what a streaming decoder holds back', () => {
    const cases: Array<[number[], number]> = [
      [[], 0], [[0x61], 0], [[0xc3], 1], [[0xc3, 0xa9], 0], [[0xe2], 1], [[0xe2, 0x82], 2], [[0xe2, 0x82, 0xac], 0],
      [[0xf0, 0x9f, 0x98], 3], [[0x9f, 0x98, 0x80], 0], [[0xff], 0], [[0xc0], 0], [[0x80], 0],
      // A second byte out of the lead's range is rejected at once: nothing held back.
      [[0xe0, 0x80], 0], [[0xed, 0xa0], 0], [[0xf0, 0x80], 0], [[0xf4, 0x90], 0], [[0xe0, 0xa0], 2], [[0xf4, 0x8f], 2],
    ];
    for (const [tail, held] of cases) {
      assert.equal(incompleteUtf8Tail(Uint8Array.from(tail)), held, JSON.stringify(tail));
      // Cross-check with the platform decoder: what it emits at end() for the held bytes is one U+FFFD.
      const streamed = new TextDecoder().decode(Uint8Array.from(tail), { stream: true });
      const full = new TextDecoder().decode(Uint8Array.from(tail));
      assert.equal(full.length - streamed.length, held > 0 ? 1 : 0, `decoder agrees on ${JSON.stringify(tail)}`);
    }
  });
});

describe('ResultCapture', () => {
  test('per-stream limits and the result fields', () => {
    const c = new ResultCapture(3);
    c.push('stdout', bytes('ab'));
    c.push('stderr', bytes('xyzw'));
    c.push('stdout', bytes('c'));
    c.end();
    assert.deepEqual(c.result(), {
      stdout: 'abc', stderr: 'xyz', truncated: true,
      capture: { limitBytes: 3, stdout: { keptBytes: 3, totalBytes: 3 }, stderr: { keptBytes: 3, totalBytes: 4 } },
    });
  });
});
