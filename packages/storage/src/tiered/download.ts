/**
 * Download of one snapshot into a local image directory, checked end to end: each chunk against the
 * sha256 the uploader computed from the bytes it read (in {@link S3ChunkStore.getChunk}, while the chunk
 * arrives), and each file's chunk sizes against its size. A file is exactly its chunks in order, so its
 * own sha256 (computed by the uploader in the same pass as the chunks') is not computed again here: that
 * second pass cost as much CPU as the first (bench/scale-out/download.mjs). Chunks are fetched up to
 * `parallelism` at once across all the image's files (not a window per file, drained at each file's
 * end), and each is written at its offset as soon as it has arrived and been checked, in whatever order
 * they come; zero chunks are left as holes.
 */
import { RamifyError } from '@ramify/contracts';
import { createHash } from 'node:crypto';
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
   * Fetch only share `index` of `of` of the image's chunks (every `of`-th, from `index`), into files
   * {@link prepareImageFiles} made already: several threads download one image together.
   */
  share?: { index: number; of: number };
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

/** The chunks of `manifest` to fetch, in order (zero chunks are holes, not fetched); its sizes checked already. */
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
  return tasks;
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
  const all = chunkTasks(manifest);
  const tasks = share ? all.filter((_, i) => i % share.of === share.index) : all;
  const handles = new Map<string, FileHandle>();
  try {
    for (const relative of new Set(tasks.map((task) => task.relative))) handles.set(relative, await open(join(options.imageDir, relative), 'r+'));
    let next = 0;
    let failure: { error: unknown } | null = null as { error: unknown } | null;
    const worker = async (): Promise<void> => {
      while (next < tasks.length && !failure) {
        const task = tasks[next++]!;
        try {
          signal?.throwIfAborted();
          const data = await store.getChunkParts(task.sha256, task.sizeBytes, signal);
          options.chunks.add(task.sha256);
          await handles.get(task.relative)!.writev(data, task.offset);
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
