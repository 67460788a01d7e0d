// Unit tests of the tiered storage's parts that hold rules of their own: content-defined cuts, the
// eviction plan, and the transfer queue's retries. (The storage as a whole: the conformance suite.)
import { silentLogger } from '@ramify/core';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { contentDefinedChunks, cutPoint, DEFAULT_CHUNKING } from './chunker.js';
import { planEviction } from './eviction.js';
import { TransferQueue } from './transfer-queue.js';

/** Chunk lengths of `data` cut by cutPoint alone. */
function cuts(data: Buffer): number[] {
  const out: number[] = [];
  for (let rest = data; rest.length > 0; ) {
    const n = cutPoint(rest, DEFAULT_CHUNKING);
    out.push(n);
    rest = rest.subarray(n);
  }
  return out;
}

describe('content-defined chunking', () => {
  it('cuts within [min, max], the same bytes the same way, and realigns after an insertion', () => {
    const data = randomBytes(64 * 1024 * 1024);
    const lengths = cuts(data);
    assert.equal(lengths.reduce((a, b) => a + b, 0), data.length);
    for (const n of lengths.slice(0, -1)) assert.ok(n >= DEFAULT_CHUNKING.minBytes && n <= DEFAULT_CHUNKING.maxBytes, `chunk of ${n} bytes`);
    assert.deepEqual(cuts(Buffer.from(data)), lengths);
    const average = data.length / lengths.length;
    assert.ok(average > DEFAULT_CHUNKING.avgBytes / 2 && average < DEFAULT_CHUNKING.avgBytes * 2, `average ${average} bytes`);
    // 100 bytes inserted at the front: every chunk after the first few is the same.
    const shifted = cuts(Buffer.concat([randomBytes(100), data]));
    const tail = (xs: number[]): string[] => xs.slice(-Math.floor(lengths.length / 2)).map(String);
    assert.deepEqual(tail(shifted), tail(lengths));
  });

  it('streams a file into the same chunks as cutting it whole, each chunk its own buffer', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ramify-cdc-'));
    try {
      const data = randomBytes(40 * 1024 * 1024 + 5);
      await writeFile(join(dir, 'f'), data);
      const handle = await open(join(dir, 'f'));
      const chunks: Buffer[] = [];
      for await (const chunk of contentDefinedChunks(handle, DEFAULT_CHUNKING, 3 * 1024 * 1024)) chunks.push(chunk);
      await handle.close();
      assert.deepEqual(chunks.map((c) => c.length), cuts(data));
      assert.ok(Buffer.concat(chunks).equals(data));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('eviction plan', () => {
  it('evicts durable, unused images, least recently used first, until the cache fits', () => {
    const plan = planEviction(
      [
        { snapshotId: 'pending', bytes: 500, lastUsedMs: null, inUse: false },
        { snapshotId: 'old', bytes: 100, lastUsedMs: 1, inUse: false },
        { snapshotId: 'busy', bytes: 100, lastUsedMs: 0, inUse: true },
        { snapshotId: 'newer', bytes: 100, lastUsedMs: 5, inUse: false },
        { snapshotId: 'newest', bytes: 100, lastUsedMs: 9, inUse: false },
      ],
      700,
    );
    assert.deepEqual(plan, { evict: ['old', 'newer'], cachedBytes: 900, afterBytes: 700 });
    assert.deepEqual(planEviction([{ snapshotId: 'a', bytes: 10, lastUsedMs: 1, inUse: false }], 10).evict, []);
  });
});

describe('transfer queue', () => {
  it('retries a failing job with backoff until it succeeds, and reports its failures meanwhile', async () => {
    let attempts = 0;
    const done: string[] = [];
    const queue = new TransferQueue({
      concurrency: 1, retry: { initialDelayMs: 10, maxDelayMs: 20 }, logger: silentLogger,
      run: async () => {
        if (++attempts < 4) throw new Error(`down ${attempts}`);
      },
      onDone: (kind, id) => done.push(`${kind} ${id}`),
    });
    queue.enqueue('upload', 's1');
    while (done.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(attempts, 4);
    assert.deepEqual(done, ['upload s1']);
    assert.equal(queue.state('s1'), undefined);
    await queue.close();
  });

  it('cancel aborts a running attempt and drops the job; a delete replaces a queued upload', async () => {
    let started = 0;
    const queue = new TransferQueue({
      concurrency: 1, logger: silentLogger,
      run: (kind, id, signal) => {
        started++;
        return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error(`${kind} ${id} aborted`))));
      },
    });
    queue.enqueue('upload', 'a');
    queue.enqueue('upload', 'b');
    assert.equal(queue.state('a')?.phase, 'running');
    assert.equal(queue.state('b')?.phase, 'queued');
    queue.enqueue('delete', 'b');
    assert.equal(queue.state('b')?.kind, 'delete');
    await queue.cancel('a');
    assert.equal(queue.state('a'), undefined);
    assert.equal(queue.state('b')?.phase, 'running');
    assert.equal(started, 2);
    await queue.close();
    assert.equal(queue.size, 0);
  });
});
