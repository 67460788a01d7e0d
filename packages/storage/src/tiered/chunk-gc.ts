/**
 * Garbage collection of chunks: a chunk no manifest lists any more (its snapshots were removed) is
 * deleted once it is older than a grace period. The grace period covers uploads running elsewhere,
 * whose chunks are stored before their manifest: a chunk younger than it is always kept.
 * Known window (docs/design/STORAGE.md §Failure handling): an upload on another host that finds an old
 * unreferenced chunk present and skips it, while this collection deletes it, leaves a manifest naming
 * a missing chunk; downloads of that snapshot then fail with `missing-chunk`, never with wrong bytes.
 */
import { parseRemoteManifest } from './remote-manifest.js';
import type { S3ChunkStore } from '../s3/s3-chunk-store.js';

export interface ChunkCollection {
  /** Chunks deleted, and the bytes they took. */
  deleted: string[];
  deletedBytes: number;
  /** Chunks kept because a manifest lists them. */
  referenced: number;
}

/**
 * Delete chunks that no manifest lists and that are older than `olderThanMs`.
 * A manifest that cannot be parsed keeps every chunk (nothing is deleted: its references are unknown).
 * @throws RamifyError STORAGE_UNAVAILABLE.
 */
export async function collectChunks(store: S3ChunkStore, options: { olderThanMs: number; nowMs?: number }): Promise<ChunkCollection> {
  const referenced = new Set<string>();
  for (const snapshotId of await store.listManifestIds()) {
    const text = await store.getManifest(snapshotId);
    if (text === null) continue; // removed meanwhile
    try {
      for (const file of Object.values(parseRemoteManifest(text, snapshotId).files)) for (const chunk of file.chunks) referenced.add(chunk.sha256);
    } catch {
      return { deleted: [], deletedBytes: 0, referenced: referenced.size };
    }
  }
  const cutoff = (options.nowMs ?? Date.now()) - options.olderThanMs;
  const garbage: string[] = [];
  let deletedBytes = 0;
  for await (const chunk of store.listChunks()) {
    if (referenced.has(chunk.sha256) || chunk.lastModified.getTime() > cutoff) continue;
    garbage.push(chunk.sha256);
    deletedBytes += chunk.storedBytes;
  }
  await store.deleteChunks(garbage);
  return { deleted: garbage, deletedBytes, referenced: referenced.size };
}
