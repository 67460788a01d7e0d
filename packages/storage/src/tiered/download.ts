/**
 * Download of one snapshot into a local image directory, checked end to end: each chunk against the
 * sha256 the uploader computed from the bytes it read (in {@link S3ChunkStore.getChunk}, while the chunk
 * arrives), and each file's chunk sizes against its size. A file is exactly its chunks in order, so its
 * own sha256 (computed by the uploader in the same pass as the chunks') is not computed again here: that
 * second pass cost as much CPU as the first (bench/scale-out/download.mjs). Chunks are fetched up to
 * `parallelism` at once across all the image's files (not a window per file, drained at each file's
 * end), largest first (content-defined chunks are 0.5-8 MiB: a large one taken last would be the download's
 * tail), and each socket read is written at its offset as it arrives (the chunk's check at its end fails
 * the download, which the caller then removes); zero chunks are left as holes.
 */
import { RamifyError } from '@ramify/contracts';
import { createHash } from 'node:crypto';
import { writeSync } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { S3ChunkStore } from '../s3/s3-chunk-store.js';
import type { RemoteManifest } from './remote-manifest.js';
import type { ChunkIndex } from './upload.js';

export interface DownloadOptions {
  store: S3ChunkStore;
  manifest: RemoteManifest;
  /** Directory to write the image into (created; must not hold the image yet). */
  imageDir: string;
  /** Chunk requests in flight at most (memory: up to this many chunks held at once). */
  parallelism: number;
  /** Chunks seen in the bucket are added (a later upload of the same bytes skips them). */
  chunks: Pick<ChunkIndex, 'add'>;
  /**
   * Several threads download one image together, into files {@link prepareImageFiles} made already:
   * `next` (one Int32 on a SharedArrayBuffer, starting at 0) is the index of the next chunk to fetch,
   * taken with `Atomics.add` by whichever thread has a request free, so that no thread idles while
   * another still has a queue (a fixed split by count could leave one thread most of the bytes: chunks are 0.5-8 MiB).
   */
  share?: { next: Int32Array };
  /** Called once the image's files exist at their full sizes (without `share`: this call made them), before any chunk is fetched. */
  onPrepared?: () => void;
  signal?: AbortSignal;
}

/** One chunk to fetch: where it goes. */
interface ChunkTask {
  relative: string;
  sha256: string;
  sizeBytes: number;
  offset: number;
}

/**
 * Check that each file's chunks in `manifest` add up to its size. @returns the image's bytes.
 * @throws RamifyError `RUNTIME_ERROR` (`checksum-mismatch`) when they do not.
 */
function checkChunkSizes(manifest: RemoteManifest): number {
  let bytes = 0;
  for (const [relative, file] of Object.entries(manifest.files)) {
    const chunked = file.chunks.reduce((sum, chunk) => sum + chunk.sizeBytes, 0);
    if (chunked !== file.sizeBytes) {
      const snapshotId = manifest.snapshot.snapshotId;
      throw new RamifyError('RUNTIME_ERROR', `snapshot '${snapshotId}' is corrupt in the bucket: ${relative}: its chunks hold ${chunked} bytes, the manifest says ${file.sizeBytes}`, { snapshotId, file: relative, reason: 'checksum-mismatch' });
    }
    bytes += file.sizeBytes;
  }
  return bytes;
}

/**
 * The chunks of `manifest` to fetch, largest first (zero chunks are holes, not fetched); its sizes
 * checked already. The order is the same in every thread (a stable sort of the manifest's order).
 */
function chunkTasks(manifest: RemoteManifest): ChunkTask[] {
  const tasks: ChunkTask[] = [];
  learnZeroShas(Object.values(manifest.files).flatMap((file) => file.chunks.map((chunk) => chunk.sizeBytes)));
  for (const [relative, file] of Object.entries(manifest.files)) {
    let offset = 0;
    for (const chunk of file.chunks) {
      if (!isZeroChunk(chunk.sha256, chunk.sizeBytes)) tasks.push({ relative, sha256: chunk.sha256, sizeBytes: chunk.sizeBytes, offset });
      offset += chunk.sizeBytes;
    }
  }
  return tasks.sort((a, b) => b.sizeBytes - a.sizeBytes);
}

/**
 * Create `manifest`'s files under `imageDir` at their full sizes (holes until written), after checking
 * the manifest's chunk sizes. @returns the image's bytes.
 * @throws RamifyError `RUNTIME_ERROR` (`checksum-mismatch`) when a file's chunks do not add up to its size.
 */
export async function prepareImageFiles(manifest: RemoteManifest, imageDir: string): Promise<{ bytes: number }> {
  const bytes = checkChunkSizes(manifest);
  await mkdir(imageDir, { recursive: true });
  for (const [relative, file] of Object.entries(manifest.files)) {
    const path = join(imageDir, relative);
    await mkdir(dirname(path), { recursive: true });
    const handle = await open(path, 'w', 0o644);
    try {
      await handle.truncate(file.sizeBytes);
    } finally {
      await handle.close();
    }
  }
  return { bytes };
}

/**
 * Write every file of `manifest` under `imageDir` (not fsynced: the caller seals the image, see
 * `LocalSnapshotStorage.adopt`), or with `share`, that share of its chunks into files already prepared.
 * @throws RamifyError `RUNTIME_ERROR` (`details.reason`: `missing-chunk`, `checksum-mismatch`) naming
 *   the snapshot and file when the bucket's bytes do not match; `STORAGE_UNAVAILABLE` when it cannot be read.
 */
export async function downloadSnapshot(options: DownloadOptions): Promise<{ bytes: number }> {
  const { manifest, store, signal, share } = options;
  const snapshotId = manifest.snapshot.snapshotId;
  // A share's files were prepared (and the manifest checked) by the caller.
  const { bytes } = share ? { bytes: checkChunkSizes(manifest) } : await prepareImageFiles(manifest, options.imageDir);
  if (!share) options.onPrepared?.();
  const tasks = chunkTasks(manifest);
  let taken = 0;
  const take = (): ChunkTask | undefined => tasks[share ? Atomics.add(share.next, 0, 1) : taken++];
  const handles = new Map<string, FileHandle>();
  try {
    for (const relative of new Set(tasks.map((task) => task.relative))) handles.set(relative, await open(join(options.imageDir, relative), 'r+'));
    let failure: { error: unknown } | null = null as { error: unknown } | null;
    const worker = async (): Promise<void> => {
      while (!failure) {
        const task = take();
        if (!task) return;
        try {
          signal?.throwIfAborted();
          // Each part is written where it goes as it arrives (synchronously: ~10 µs into the page cache, on a
          // download thread; one at a time through the thread pool cost more), and a write error is thrown
          // once the chunk is in, as itself (not as the bucket's failure).
          const fd = handles.get(task.relative)!.fd;
          let writeError: { error: unknown } | null = null;
          await store.getChunkInto(task.sha256, task.sizeBytes, (part, at) => {
            if (writeError) return;
            try {
              for (let done = 0; done < part.length; ) done += writeSync(fd, part, done, part.length - done, task.offset + at + done);
            } catch (error) {
              writeError = { error };
            }
          }, signal);
          if (writeError) throw (writeError as { error: unknown }).error;
          options.chunks.add(task.sha256);
        } catch (error) {
          failure ??= { error: naming(error, snapshotId, task.relative) };
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(options.parallelism, tasks.length)) }, worker));
    if (failure) throw failure.error;
  } finally {
    await Promise.allSettled([...handles.values()].map((handle) => handle.close()));
  }
  return { bytes };
}

/** A chunk's `RUNTIME_ERROR` (corrupt, missing) named after the snapshot and file; any other error as is. */
function naming(error: unknown, snapshotId: string, relative: string): unknown {
  if (!(error instanceof RamifyError && error.code === 'RUNTIME_ERROR')) return error;
  return new RamifyError('RUNTIME_ERROR', `snapshot '${snapshotId}' is corrupt in the bucket: ${relative}: ${error.message}`, { ...error.details, snapshotId, file: relative });
}

const zeroShas = new Map<number, string>();
const ZERO_BLOCK = Buffer.alloc(1024 * 1024);

/**
 * The sha256 of `sizeBytes` zeros for every size in `sizes`, cached. Content-defined chunks have all
 * sizes, so a cache by size alone hashed a whole image's worth of zeros on every download (~60 ms of
 * main-thread CPU on an 89 MB image); here the sizes are hashed in ascending order by one running hash,
 * copied at each size: zeros up to the largest size are hashed once.
 */
function learnZeroShas(sizes: Iterable<number>): void {
  if (zeroShas.size > 100_000) zeroShas.clear(); // a bound on a long-running daemon's memory (~10 MB)
  const missing = [...new Set(sizes)].filter((size) => !zeroShas.has(size)).sort((a, b) => a - b);
  const hash = createHash('sha256');
  let hashed = 0;
  for (const size of missing) {
    while (hashed < size) {
      const step = Math.min(ZERO_BLOCK.length, size - hashed);
      hash.update(ZERO_BLOCK.subarray(0, step));
      hashed += step;
    }
    zeroShas.set(size, hash.copy().digest('hex'));
  }
}

/** Whether `sha256` is that of `sizeBytes` zeros (such chunks are not stored). */
export function isZeroChunk(sha256: string, sizeBytes: number): boolean {
  if (!zeroShas.has(sizeBytes)) learnZeroShas([sizeBytes]);
  return zeroShas.get(sizeBytes) === sha256;
}
