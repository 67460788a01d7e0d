/**
 * Upload of one committed snapshot: each file is read once and cut into content-defined chunks
 * (`chunker.ts`; hashed whole and per chunk as it goes), each chunk the bucket lacks is stored (at most
 * `parallelism` requests in flight, so memory stays near `parallelism` × the largest chunk), and the
 * remote manifest is written last.
 */
import { RamifyError } from '@ramify/contracts';
import type { SnapshotManifest } from '@ramify/core';
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { S3ChunkStore } from '../s3/s3-chunk-store.js';
import { CHUNKING_ALGORITHM, contentDefinedChunks, type ChunkingParameters } from './chunker.js';
import { REMOTE_MANIFEST_VERSION, serializeRemoteManifest, type ChunkRef, type RemoteFile, type RemoteManifest } from './remote-manifest.js';

export interface UploadOptions {
  store: S3ChunkStore;
  /** Local image directory (the runtime's files). */
  imageDir: string;
  /** The committed local manifest (its sha256s may still be null: they are computed here). */
  manifest: SnapshotManifest;
  /** Chunk sizes (each chunk is one PUT of at most `maxBytes`: below S3's 5 MiB multipart minimum, so no object needs multipart). */
  chunking: ChunkingParameters;
  /** Chunk requests in flight at once. */
  parallelism: number;
  /** What this process knows of the bucket's chunks (shared by concurrent uploads and downloads). */
  chunks: ChunkIndex;
  signal?: AbortSignal;
}

export interface UploadResult {
  manifest: RemoteManifest;
  /** Bytes this upload stored (compressed chunks + manifest): what the bucket grew by. */
  storedBytes: number;
  /** Chunks listed by the manifest, and how many of them were stored by this upload. */
  chunks: number;
  newChunks: number;
}

/**
 * Store `manifest`'s image in the bucket, then its remote manifest (the durability point).
 * @throws RamifyError `STORAGE_UNAVAILABLE` when the bucket fails; `RUNTIME_ERROR` when a file's size
 *   differs from the manifest's (the image changed after commit); the abort reason when `signal` fires.
 */
export async function uploadSnapshot(options: UploadOptions): Promise<UploadResult> {
  const { store, manifest, signal } = options;
  let storedBytes = 0;
  let chunks = 0;
  let newChunks = 0;
  const files: Record<string, RemoteFile> = {};
  for (const [relative, expected] of Object.entries(manifest.files).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const refs: ChunkRef[] = [];
    const fileHash = createHash('sha256');
    /** Chunk requests in flight; they never reject: the first failure is kept in `failure`. */
    const inFlight = new Set<Promise<void>>();
    let failure: { error: unknown } | null = null as { error: unknown } | null;
    const handle = await open(join(options.imageDir, relative), 'r');
    try {
      for await (const data of contentDefinedChunks(handle, options.chunking)) {
        signal?.throwIfAborted();
        fileHash.update(data);
        const sha256 = createHash('sha256').update(data).digest('hex');
        refs.push({ sha256, sizeBytes: data.length });
        chunks++;
        if (isZero(data)) continue;
        const task: Promise<void> = options.chunks
          .ensure(sha256, () => {
            newChunks++;
            return store.putChunk(sha256, data, signal);
          })
          .then(
            (stored) => void (storedBytes += stored),
            (error: unknown) => void (failure ??= { error }),
          )
          .finally(() => inFlight.delete(task));
        inFlight.add(task);
        if (inFlight.size >= options.parallelism) await Promise.race(inFlight);
        if (failure) throw failure.error;
      }
      await Promise.all(inFlight);
      if (failure) throw failure.error;
    } finally {
      await Promise.all(inFlight);
      await handle.close();
    }
    const sizeBytes = refs.reduce((sum, ref) => sum + ref.sizeBytes, 0);
    if (sizeBytes !== expected.sizeBytes) {
      throw new RamifyError('RUNTIME_ERROR', `snapshot '${manifest.snapshotId}': ${relative} is ${sizeBytes} bytes, its manifest says ${expected.sizeBytes} (changed after commit)`, { snapshotId: manifest.snapshotId, file: relative, reason: 'size-mismatch' });
    }
    files[relative] = { sizeBytes, sha256: fileHash.digest('hex'), chunks: refs };
  }
  const remote: RemoteManifest = {
    formatVersion: REMOTE_MANIFEST_VERSION,
    chunking: { algorithm: CHUNKING_ALGORITHM, ...options.chunking },
    snapshot: { ...manifest, files: Object.fromEntries(Object.entries(files).map(([name, file]) => [name, { sizeBytes: file.sizeBytes, sha256: file.sha256 }])) },
    files,
    uploadedAt: new Date().toISOString(),
  };
  const text = serializeRemoteManifest(remote);
  signal?.throwIfAborted();
  await store.putManifest(manifest.snapshotId, text, signal);
  return { manifest: remote, storedBytes: storedBytes + Buffer.byteLength(text), chunks, newChunks };
}

/**
 * What this process knows of the bucket's chunks: those seen there (stored or fetched by this process,
 * or listed at start) and those being stored right now (a second upload of the same chunk waits for
 * the first). A chunk seen more than `freshMs` ago is stored again (an idempotent PUT that also renews
 * its age): garbage collection deletes unreferenced chunks older than its grace period (24 h by
 * default), so a skip may only trust what it saw well within it.
 */
export class ChunkIndex {
  private readonly seen = new Map<string, number>();
  private readonly storing = new Map<string, Promise<number>>();

  /** `freshMs`: how long a sighting is trusted; default 12 h (half the collection's grace period). */
  constructor(private readonly freshMs = 12 * 3_600_000) {}

  /** Record that chunk `sha256` was in the bucket at `atMs` (default now). */
  add(sha256: string, atMs = Date.now()): void {
    if ((this.seen.get(sha256) ?? -Infinity) < atMs) this.seen.set(sha256, atMs);
  }

  /** Forget chunks (deleted by garbage collection). */
  forget(sha256s: Iterable<string>): void {
    for (const sha256 of sha256s) this.seen.delete(sha256);
  }

  /**
   * Make sure chunk `sha256` is in the bucket: at once when seen there recently, else by waiting for a
   * store of it already running, else by `store()` (which resolves to the bytes it stored). Resolves to
   * the bytes this call stored; rejects when the store it waited for failed.
   */
  async ensure(sha256: string, store: () => Promise<number>): Promise<number> {
    if (Date.now() - (this.seen.get(sha256) ?? -Infinity) < this.freshMs) return 0;
    const running = this.storing.get(sha256);
    if (running) return running.then(() => 0);
    const storing = store().then((stored) => {
      this.add(sha256);
      return stored;
    });
    this.storing.set(sha256, storing);
    try {
      return await storing;
    } finally {
      this.storing.delete(sha256);
    }
  }
}

let zeros = Buffer.alloc(0);

/** Whether every byte of `data` is 0 (such chunks are never stored: they read back as holes). One memcmp. */
export function isZero(data: Buffer): boolean {
  if (zeros.length < data.length) zeros = Buffer.alloc(data.length);
  return data.equals(zeros.subarray(0, data.length));
}
