/**
 * The SnapshotStorage conformance suite (for tests; imports node:test): {@link snapshotStorageConformance}
 * over a {@link StorageHarness}, and a real S3-compatible server to run remote tiers against.
 */
export { snapshotStorageConformance } from './suite.js';
export { eventually, waitDurable } from './remote-cases.js';
export type { CreateOptions, RemoteControls, StorageHarness, StorageUnderTest } from './harness.js';
export { startLocalS3Server, S3RVER_CREDENTIALS, type LocalS3Server } from './local-s3-server.js';
export * from './image-files.js';
