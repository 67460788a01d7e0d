/** `@ramify/storage`: where checkpoint images live. Local disk today; S3-compatible storage later. */
export {
  LocalSnapshotStorage,
  type LocalSnapshotStorageOptions,
  type OpenSnapshotOptions,
  type SnapshotVerification,
  type SweepOptions,
} from './local-snapshot-storage.js';
export { MANIFEST_FILE, parseManifest } from './manifest.js';
export { sha256File } from './hash.js';
