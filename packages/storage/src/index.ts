/**
 * `@ramify/storage`: where checkpoint images live. Local disk ({@link LocalSnapshotStorage}), or local
 * disk as a cache in front of an S3-compatible bucket ({@link TieredSnapshotStorage}).
 */
export {
  LocalSnapshotStorage,
  isValidSnapshotId,
  type LocalSnapshotStorageOptions,
  type OpenSnapshotOptions,
  type SnapshotVerification,
  type SweepOptions,
} from './local-snapshot-storage.js';
export { MANIFEST_FILE, parseManifest } from './manifest.js';
export { sha256File } from './hash.js';
export { checkS3Access, createS3Client, describeBucket, type S3ConnectionOptions } from './s3/s3-connection.js';
export { S3ChunkStore, type StoredChunk } from './s3/s3-chunk-store.js';
export { TieredSnapshotStorage, type TieredSnapshotStorageOptions } from './tiered/tiered-snapshot-storage.js';
export { CHUNKING_ALGORITHM, DEFAULT_CHUNKING, contentDefinedChunks, cutPoint, type ChunkingParameters } from './tiered/chunker.js';
export { REMOTE_MANIFEST_VERSION, parseRemoteManifest, type RemoteManifest } from './tiered/remote-manifest.js';
export type { ChunkCollection } from './tiered/chunk-gc.js';
export type { RetryOptions } from './tiered/transfer-queue.js';
