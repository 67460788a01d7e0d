/**
 * The SnapshotStorage port: where checkpoint images live. A snapshot is a directory holding the
 * runtime's image plus `manifest.json` (format version, runtime, sizes, checksums, parent). Local disk
 * by default (`@ramify/storage`); S3-compatible storage is a later implementation of the same port.
 */
import type { RuntimeName } from '@ramify/contracts';

/** Current manifest format; readers reject any other version rather than guess. */
export const SNAPSHOT_FORMAT_VERSION = 1;

export interface SnapshotManifest {
  formatVersion: number;
  snapshotId: string;
  runtime: RuntimeName;
  templateId: string;
  parentSnapshotId: string | null;
  createdAt: string;
  /** Total bytes of the image files. */
  sizeBytes: number;
  /**
   * Each image file by relative path. `sha256` is null until the storage has hashed the file: commit
   * returns once sizes are recorded and hashes in the background (a large image would otherwise add
   * ~3 ms/MB to every pause).
   */
  files: Record<string, { sizeBytes: number; sha256: string | null }>;
}

export interface SnapshotStorage {
  /** A fresh, empty-to-be image directory path for `snapshotId` (its parent exists; the directory does not). */
  prepare(snapshotId: string): Promise<{ imageDir: string }>;
  /** Seal a written image: compute sizes and checksums, write the manifest atomically. */
  commit(manifest: Omit<SnapshotManifest, 'formatVersion' | 'sizeBytes' | 'files' | 'createdAt'>): Promise<SnapshotManifest>;
  /** Local path of a committed image, ready to restore. Rejects `SNAPSHOT_NOT_FOUND`, or `RUNTIME_ERROR` for an unknown format. */
  open(snapshotId: string): Promise<{ imageDir: string; manifest: SnapshotManifest }>;
  /** Delete a snapshot's files; a no-op when absent. */
  remove(snapshotId: string): Promise<void>;
  /** Ids of committed snapshots (for reconcile and garbage collection). */
  list(): Promise<string[]>;
}
