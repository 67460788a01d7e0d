import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { RamifyError } from '@ramify/contracts';
import { startLocalS3Server, type LocalS3Server } from '../testsuite/local-s3-server.js';
import { S3ChunkStore } from './s3-chunk-store.js';

const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** Every part `getChunkInto` hands on, with its offset. */
async function collect(store: S3ChunkStore, sha256: string, sizeBytes: number): Promise<{ parts: Array<{ at: number; bytes: Buffer }>; error: unknown }> {
  const parts: Array<{ at: number; bytes: Buffer }> = [];
  const error = await store.getChunkInto(sha256, sizeBytes, (part, at) => void parts.push({ at, bytes: Buffer.from(part) })).then(() => null, (e: unknown) => e);
  return { parts, error };
}

/** The parts laid at their offsets into `sizeBytes` bytes; throws when two overlap or one falls outside. */
function assemble(parts: Array<{ at: number; bytes: Buffer }>, sizeBytes: number): Buffer {
  const out = Buffer.alloc(sizeBytes);
  let covered = 0;
  for (const { at, bytes } of [...parts].sort((a, b) => a.at - b.at)) {
    assert.equal(at, covered, 'parts are contiguous');
    assert.ok(at + bytes.length <= sizeBytes, 'no part past the chunk');
    bytes.copy(out, at);
    covered += bytes.length;
  }
  assert.equal(covered, sizeBytes);
  return out;
}

const isMismatch = (error: unknown): boolean =>
  error instanceof RamifyError && error.code === 'RUNTIME_ERROR' && (error.details as { reason?: string } | undefined)?.reason === 'checksum-mismatch';

describe('S3ChunkStore.getChunkInto: a chunk handed on as it arrives, checked at its end (s3rver)', () => {
  let s3: LocalS3Server;
  let store: S3ChunkStore;
  before(async () => {
    s3 = await startLocalS3Server();
    store = new S3ChunkStore(s3.connection());
  });
  after(() => s3.close());

  it('a raw chunk arrives in parts at their offsets, the whole chunk and nothing else', async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    await store.putChunk(sha(bytes), bytes);
    const { parts, error } = await collect(store, sha(bytes), bytes.length);
    assert.equal(error, null);
    assert.ok(parts.length > 1, 'a 3 MiB raw chunk comes in several socket reads');
    assert.ok(assemble(parts, bytes.length).equals(bytes));
  });

  it('a compressed chunk is handed on once, decompressed and checked', async () => {
    const bytes = Buffer.alloc(2 * 1024 * 1024, 'compressible ');
    assert.ok((await store.putChunk(sha(bytes), bytes)) < bytes.length / 10, 'stored compressed');
    const { parts, error } = await collect(store, sha(bytes), bytes.length);
    assert.equal(error, null);
    assert.deepEqual(parts.map((p) => p.at), [0]);
    assert.ok(parts[0]!.bytes.equals(bytes));
  });

  it('a raw chunk with other bytes under its name fails its check after the parts (the caller discards them)', async () => {
    const bytes = randomBytes(1024 * 1024);
    const other = Buffer.from(bytes);
    other[4321] = (other[4321]! + 1) % 256;
    await store.putChunk(sha(bytes), other);
    const { error } = await collect(store, sha(bytes), bytes.length);
    assert.ok(isMismatch(error), String(error));
  });

  it('a raw chunk longer than its size never hands on a byte past it', async () => {
    const bytes = randomBytes(512 * 1024);
    await store.putChunk(sha(bytes), Buffer.concat([bytes, randomBytes(300 * 1024)]));
    const { parts, error } = await collect(store, sha(bytes), bytes.length);
    assert.ok(isMismatch(error), String(error));
    for (const { at, bytes: part } of parts) assert.ok(at + part.length <= bytes.length, `part at ${at} of ${part.length} bytes ends past the chunk`);
  });

  it('a compressed chunk that decompresses to other bytes, or not at all, is never handed on', async () => {
    const bytes = Buffer.alloc(1024 * 1024, 'compressible ');
    const wrong = Buffer.alloc(1024 * 1024, 'other bytes! ');
    await store.putChunk(sha(bytes), wrong);
    const decompressesWrong = await collect(store, sha(bytes), bytes.length);
    assert.ok(isMismatch(decompressesWrong.error), String(decompressesWrong.error));
    assert.deepEqual(decompressesWrong.parts, []);
    const garbage = randomBytes(4096);
    await store.client.send(new PutObjectCommand({ Bucket: store.options.bucket, Key: store.chunkKey(sha(bytes)), Body: garbage, Metadata: { 'ramify-encoding': 'br' } }));
    const undecodable = await collect(store, sha(bytes), bytes.length);
    assert.ok(isMismatch(undecodable.error), String(undecodable.error));
    assert.deepEqual(undecodable.parts, []);
  });

  it('a missing chunk is missing-chunk, with nothing handed on', async () => {
    const { parts, error } = await collect(store, sha(randomBytes(64)), 64);
    assert.ok(error instanceof RamifyError && error.code === 'RUNTIME_ERROR' && (error.details as { reason?: string }).reason === 'missing-chunk', String(error));
    assert.deepEqual(parts, []);
  });
});
