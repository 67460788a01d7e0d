/**
 * Download of one snapshot into a local image directory, checked end to end: each chunk against the
 * sha256 the uploader computed from the bytes it read (in {@link S3ChunkStore.getChunk}, while the chunk
 * arrives), and each file's chunk sizes against its size. A file is exactly its chunks in order, so its
 * own sha256 (computed by the uploader in the same pass as the chunks') is not computed again here: that
 * second pass cost as much CPU as the first (bench/scale-out/download.mjs). Chunks are fetched up to
 * `parallelism` ahead and written where they go; zero chunks are left as holes.
 */
import { RamifyError } from '@ramify/contracts';
import { createHash } from 'node:crypto';
import { mkdir, open } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { S3ChunkStore } from '../s3/s3-chunk-store.js';
import type { RemoteManifest } from './remote-manifest.js';
import type { ChunkIndex } from './upload.js';

export interface DownloadOptions {
  store: S3ChunkStore;
  manifest: RemoteManifest;
  /** Directory to write the image into (created; must not hold the image yet). */
  imageDir: string;
  /** Chunks fetched ahead at most. */
  parallelism: number;
  /** Chunks seen in the bucket are added (a later upload of the same bytes skips them). */
  chunks: ChunkIndex;
  signal?: AbortSignal;
}

/**
 * Write every file of `manifest` under `imageDir` (not fsynced: the caller seals the image, see
 * `LocalSnapshotStorage.adopt`).
 * @throws RamifyError `RUNTIME_ERROR` (`details.reason`: `missing-chunk`, `checksum-mismatch`) naming
 *   the snapshot and file when the bucket's bytes do not match; `STORAGE_UNAVAILABLE` when it cannot be read.
 */
export async function downloadSnapshot(options: DownloadOptions): Promise<{ bytes: number }> {
  const { manifest, store, signal } = options;
  const snapshotId = manifest.snapshot.snapshotId;
  let bytes = 0;
  await mkdir(options.imageDir, { recursive: true });
  for (const [relative, file] of Object.entries(manifest.files)) {
    const chunked = file.chunks.reduce((sum, chunk) => sum + chunk.sizeBytes, 0);
    if (chunked !== file.sizeBytes) {
      throw new RamifyError('RUNTIME_ERROR', `snapshot '${snapshotId}' is corrupt in the bucket: ${relative}: its chunks hold ${chunked} bytes, the manifest says ${file.sizeBytes}`, { snapshotId, file: relative, reason: 'checksum-mismatch' });
    }
    const path = join(options.imageDir, relative);
    await mkdir(dirname(path), { recursive: true });
    const handle = await open(path, 'w', 0o644);
    const ahead: Array<Promise<Buffer[] | null>> = [];
    const fetch = (index: number): Promise<Buffer[] | null> => {
      const chunk = file.chunks[index]!;
      if (isZeroChunk(chunk.sha256, chunk.sizeBytes)) return Promise.resolve(null);
      return store.getChunkParts(chunk.sha256, chunk.sizeBytes, signal).then((data) => {
        options.chunks.add(chunk.sha256);
        return data;
      });
    };
    try {
      await handle.truncate(file.sizeBytes);
      let next = 0;
      let offset = 0;
      for (let index = 0; index < file.chunks.length; index++) {
        while (next < file.chunks.length && next < index + options.parallelism) {
          const fetched = fetch(next++);
          fetched.catch(() => undefined); // awaited in order below; a failure ahead is not unhandled meanwhile
          ahead.push(fetched);
        }
        const data = await ahead.shift()!.catch((error: unknown) => {
          if (error instanceof RamifyError && error.code === 'RUNTIME_ERROR') {
            throw new RamifyError('RUNTIME_ERROR', `snapshot '${snapshotId}' is corrupt in the bucket: ${relative}: ${error.message}`, { ...error.details, snapshotId, file: relative });
          }
          throw error;
        });
        if (data) await handle.writev(data, offset);
        offset += file.chunks[index]!.sizeBytes;
      }
    } finally {
      await Promise.allSettled(ahead);
      await handle.close();
    }
    bytes += file.sizeBytes;
  }
  return { bytes };
}

const zeroShas = new Map<number, string>();
let zeros = Buffer.alloc(0);

function zeroBuffer(sizeBytes: number): Buffer {
  if (zeros.length < sizeBytes) zeros = Buffer.alloc(sizeBytes);
  return zeros.subarray(0, sizeBytes);
}

/** Whether `sha256` is that of `sizeBytes` zeros (such chunks are not stored). */
export function isZeroChunk(sha256: string, sizeBytes: number): boolean {
  let sha = zeroShas.get(sizeBytes);
  if (sha === undefined) {
    sha = createHash('sha256').update(zeroBuffer(sizeBytes)).digest('hex');
    zeroShas.set(sizeBytes, sha);
  }
  return sha === sha256;
}
