/**
 * SFTP handles over whole-file streams: pipelined READs served from one stream in any chunking, EOF past
 * the end, a re-read within the kept window; WRITEs taken in any order within the bound and delivered in
 * order, a range written twice or a gap refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FileInfo } from '@ramify/contracts';
import { ReadHandle, WriteHandle } from './handles.js';

const INFO: FileInfo = { name: 'f', path: '/f', type: 'file', size: 0, mode: 0o644, mtimeMs: 0 };
const bytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7) % 251));

async function* chunked(data: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < data.length; at += size) yield data.subarray(at, at + size);
}

test('concurrent READs at increasing offsets get their exact ranges, then EOF', async () => {
  const data = bytes(100_000);
  const handle = new ReadHandle('/f', INFO, chunked(data, 7_777));
  const reads = Array.from({ length: 8 }, (_, i) => handle.read(i * 16_384, 16_384));
  const got = await Promise.all(reads);
  assert.deepEqual(Buffer.concat(got.map((b) => b ?? Buffer.alloc(0))), data);
  assert.equal(got[6]!.length, 100_000 - 6 * 16_384, 'a short read only at the end');
  assert.equal(got[7], null);
  assert.deepEqual(await handle.read(50_000, 10), data.subarray(50_000, 50_010), 'a re-read within the window');
  assert.equal(await handle.read(100_000, 1), null);
});

test('WRITEs out of order arrive in order; a range written twice or a gap is refused', async () => {
  const data = bytes(50_000);
  let received: Buffer | undefined;
  const upload = async (stream: AsyncIterable<Uint8Array>): Promise<FileInfo> => {
    const parts: Buffer[] = [];
    for await (const chunk of stream) parts.push(Buffer.from(chunk));
    received = Buffer.concat(parts);
    return { ...INFO, size: received.length };
  };
  const handle = new WriteHandle('/f', upload);
  await handle.write(20_000, data.subarray(20_000, 50_000));
  await handle.write(0, data.subarray(0, 10_000));
  await assert.rejects(handle.write(5_000, data.subarray(5_000, 6_000)), { code: 'BAD_REQUEST' });
  await handle.write(10_000, data.subarray(10_000, 20_000));
  assert.equal(handle.size, 50_000);
  assert.equal((await handle.close()).size, 50_000);
  assert.deepEqual(received, data);

  const gap = new WriteHandle('/g', upload);
  await gap.write(10, Buffer.from('late'));
  await assert.rejects(gap.close(), /gap at offset 0/);
});

test('writing over a longer file keeps its tail unless a size cuts it; APPEND continues at its end', async () => {
  const original = Buffer.from('0123456789abcdef');
  const uploads: Buffer[] = [];
  const upload = async (stream: AsyncIterable<Uint8Array>): Promise<FileInfo> => {
    const parts: Buffer[] = [];
    for await (const chunk of stream) parts.push(Buffer.from(chunk));
    uploads.push(Buffer.concat(parts));
    return { ...INFO, size: uploads.at(-1)!.length };
  };
  const kept = { size: original.length, read: async () => chunked(original, 5) };

  const inPlace = new WriteHandle('/f', upload, kept);
  await inPlace.write(0, Buffer.from('XYZ'));
  await inPlace.close();
  assert.equal(uploads.at(-1)!.toString(), 'XYZ3456789abcdef', 'the bytes past the last written are the original’s');

  const cut = new WriteHandle('/f', upload, kept);
  await cut.write(0, Buffer.from('XYZ'));
  cut.afterClose.size = 3; // scp: FSETSTAT size after the last WRITE
  await cut.close();
  assert.equal(uploads.at(-1)!.toString(), 'XYZ', 'nothing copied when the size cuts it off');

  const appended = new WriteHandle('/f', upload, kept);
  await appended.appendToOriginal();
  await appended.write(original.length, Buffer.from('+more'));
  await appended.close();
  assert.equal(uploads.at(-1)!.toString(), '0123456789abcdef+more');
});
