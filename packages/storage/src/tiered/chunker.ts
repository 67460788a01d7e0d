/**
 * Content-defined chunking (FastCDC: a gear rolling hash, cut points skipped below the minimum size,
 * normalized chunking around the average; Xia et al., USENIX ATC 2016). A cut depends only on the
 * bytes just before it, so an insertion or a shifted region changes the chunks around it and no
 * others: the images of a parent and its forks, whose memory pages sit at different offsets, share
 * most chunks. Fixed-size chunks share none of them (measured: docs/design/STORAGE.md §Chunking).
 *
 * No npm library fits (rabin-wasm, last published 2021, pulls node-fetch; rabin and rabin-native are
 * native builds), and the loop is short. The gear table is derived from sha256, so it is the same in
 * every build: the same bytes always cut the same way (a change would cost dedup, never correctness).
 */
import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';

/** Chunk sizes, bytes. */
export interface ChunkingParameters {
  minBytes: number;
  avgBytes: number;
  maxBytes: number;
}

/**
 * The chunking this Ramify writes: average 2 MiB (min 512 KiB, max 8 MiB). On real gVisor images of a
 * parent and 8 forks it stored as much as an average of 1 MiB, or up to a sixth more, with half the
 * objects (each object costs a request on every upload and download). See STORAGE.md for the measurements.
 */
export const DEFAULT_CHUNKING: ChunkingParameters = { minBytes: 512 * 1024, avgBytes: 2 * 1024 * 1024, maxBytes: 8 * 1024 * 1024 };

/** Name of the algorithm and gear table, recorded in remote manifests. */
export const CHUNKING_ALGORITHM = 'fastcdc-gear-sha256-v1';

const GEAR = new Uint32Array(256);
for (let i = 0; i < 256; i++) GEAR[i] = createHash('sha256').update(`ramify-gear-${i}`).digest().readUInt32LE(0);

/**
 * The top `bits` bits: in a gear hash, bit k depends on the last k + 1 bytes only, so the top bits,
 * which depend on the last 32, decide the cuts.
 */
function mask(bits: number): number {
  return (0xffffffff << (32 - bits)) >>> 0;
}

/**
 * Length of the first chunk of `data` (`data.length` when no cut is found before `maxBytes` and
 * `data` is shorter than that: the caller decides whether more bytes follow).
 */
export function cutPoint(data: Uint8Array, params: ChunkingParameters): number {
  const { minBytes, avgBytes, maxBytes } = params;
  if (data.length <= minBytes) return data.length;
  const bits = Math.round(Math.log2(avgBytes));
  const strict = mask(bits + 1);
  const loose = mask(bits - 1);
  const end = Math.min(data.length, maxBytes);
  const middle = Math.min(end, avgBytes);
  let hash = 0;
  let i = minBytes;
  for (; i < middle; i++) {
    hash = ((hash << 1) + GEAR[data[i]!]!) >>> 0;
    if ((hash & strict) === 0) return i + 1;
  }
  for (; i < end; i++) {
    hash = ((hash << 1) + GEAR[data[i]!]!) >>> 0;
    if ((hash & loose) === 0) return i + 1;
  }
  return end;
}

/**
 * The chunks of an open file, in order, read `readBytes` at a time into one buffer reused for the whole
 * file (each yielded chunk is a copy: its own buffer, safe to keep). One copy per byte: the earlier
 * version concatenated every read onto the unconsumed rest and allocated a fresh 16 MiB block per read,
 * which cost the upload of an 89 MB gVisor image 3x the cuts themselves (STORAGE.md, "Where the time goes").
 */
export async function* contentDefinedChunks(handle: FileHandle, params: ChunkingParameters = DEFAULT_CHUNKING, readBytes = 16 * 1024 * 1024): AsyncGenerator<Buffer> {
  const buffer = Buffer.allocUnsafe(Math.max(readBytes, params.maxBytes) + params.maxBytes);
  let start = 0;
  let end = 0;
  let position = 0;
  let eof = false;
  for (;;) {
    if (!eof && end - start < params.maxBytes) {
      // Move the unconsumed rest (under maxBytes) to the front and fill the buffer after it.
      buffer.copyWithin(0, start, end);
      end -= start;
      start = 0;
      while (!eof && end < buffer.length) {
        const { bytesRead } = await handle.read(buffer, end, buffer.length - end, position);
        if (bytesRead === 0) eof = true;
        position += bytesRead;
        end += bytesRead;
      }
    }
    if (end === start) return;
    const length = cutPoint(buffer.subarray(start, end), params);
    yield Buffer.from(buffer.subarray(start, start + length));
    start += length;
  }
}
