/**
 * The SnapshotStorage port: where checkpoint images live. A snapshot is a directory holding the
 * runtime's image plus `manifest.json` (format version, runtime, sizes, checksums, parent). Two
 * implementations in `@ramify/storage`: local disk (the default), and local disk as a cache in front of
 * an S3-compatible bucket (`commit` returns once the image is safe locally; it is uploaded in the
 * background; `open` downloads an image this host does not hold). Both pass the same conformance suite
 * (`@ramify/storage` `testsuite/`).
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

/**
 * Where a committed snapshot stands against the loss of this host (see {@link SnapshotStorage.uploadState}):
 * - `pending`: only on this host's disk; an upload is queued or waiting to retry (`lastError` says why);
 * - `uploading`: an upload is running;
 * - `durable`: stored remotely (manifest written last), so another host can open it.
 */
export interface SnapshotUploadState {
  state: 'pending' | 'uploading' | 'durable';
  /** Failed upload attempts since this process started (0 once durable or before a first try). */
  failedAttempts: number;
  /** The last attempt's error, null when none failed. */
  lastError: string | null;
  /** When the remote manifest was written (ISO 8601), null until durable. */
  durableAt: string | null;
}

export interface SnapshotStorage {
  /** A fresh, empty-to-be image directory path for `snapshotId` (its parent exists; the directory does not). */
  prepare(snapshotId: string): Promise<{ imageDir: string }>;
  /** Seal a written image: compute sizes and checksums, write the manifest atomically. */
  commit(manifest: Omit<SnapshotManifest, 'formatVersion' | 'sizeBytes' | 'files' | 'createdAt'>): Promise<SnapshotManifest>;
  /** Local path of a committed image, ready to restore. Rejects `SNAPSHOT_NOT_FOUND`, or `RUNTIME_ERROR` for an unknown format. */
  open(snapshotId: string): Promise<{ imageDir: string; manifest: SnapshotManifest }>;
  /**
   * CAPABILITY (optional): {@link open}, but an image this host has to download is answered as soon as
   * its files exist at their full sizes (after the remote manifest is read), with `arriving`: resolves
   * once every byte is written and checked, rejects with the download's error (the directory is removed
   * then). The caller must read no byte of the files before `arriving` resolves (a runtime may start
   * its instance meanwhile: `Runtime.restore`'s `imageArriving`). A cached image has no `arriving`.
   * Rejects as {@link open} until the files exist.
   */
  openArriving?(snapshotId: string): Promise<{ imageDir: string; manifest: SnapshotManifest; arriving?: Promise<void> }>;
  /** Delete a snapshot's files; a no-op when absent. */
  remove(snapshotId: string): Promise<void>;
  /** Ids of committed snapshots (for reconcile and garbage collection). */
  list(): Promise<string[]>;
  /**
   * CAPABILITY (optional): present on storages that copy snapshots off this host. Absent: a snapshot is
   * exactly as durable as the local disk. Rejects `SNAPSHOT_NOT_FOUND` for an unknown snapshot.
   */
  uploadState?(snapshotId: string): Promise<SnapshotUploadState>;
}
