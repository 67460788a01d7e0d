// The SnapshotStorage conformance suite against both implementations: local disk, and local disk as a
// cache in front of a real S3-compatible server (s3rver on 127.0.0.1, started here, objects in a temp
// dir; the AWS SDK talks to it unchanged). Each tiered storage gets its own bucket prefix.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { LocalSnapshotStorage } from './local-snapshot-storage.js';
import { S3ChunkStore } from './s3/s3-chunk-store.js';
import type { CreateOptions, StorageUnderTest } from './testsuite/harness.js';
import { assertCode, assertOpensAs, writeAndCommit } from './testsuite/image-files.js';
import { startLocalS3Server } from './testsuite/local-s3-server.js';
import { waitDurable } from './testsuite/remote-cases.js';
import { snapshotStorageConformance } from './testsuite/suite.js';
import { parseRemoteManifest } from './tiered/remote-manifest.js';
import { TieredSnapshotStorage } from './tiered/tiered-snapshot-storage.js';

const root = await mkdtemp(join(tmpdir(), 'ramify-storage-conformance-'));
const s3 = await startLocalS3Server();
after(async () => {
  await s3.close();
  await rm(root, { recursive: true, force: true });
});

let dirs = 0;
const freshDir = (): Promise<string> => mkdtemp(join(root, `${dirs++}-`));

snapshotStorageConformance({
  name: 'local disk',
  create: async () => {
    const storage = new LocalSnapshotStorage({ rootDir: await freshDir() });
    return { storage, close: () => storage.settle() };
  },
});

let prefixes = 0;
/** A tiered storage on `rootDir` (default a fresh one) over the bucket prefix `prefix` (default a fresh one). */
async function tiered(options: CreateOptions = {}, prefix = `t${prefixes++}/`, rootDir?: string): Promise<StorageUnderTest> {
  const dir = rootDir ?? (await freshDir());
  const store = new S3ChunkStore(s3.connection(prefix));
  const storage = new TieredSnapshotStorage({ rootDir: dir, store, cacheBudgetBytes: options.cacheBudgetBytes ?? null, retry: { initialDelayMs: 100, maxDelayMs: 400 } });
  await storage.start();
  return {
    storage,
    close: () => storage.close(),
    remote: {
      otherHost: () => tiered({}, prefix),
      restart: () => tiered(options, prefix, dir),
      isCached: async (snapshotId) => (await storage.local.list()).includes(snapshotId),
      corruptChunk: async (snapshotId) => {
        const manifest = parseRemoteManifest((await store.getManifest(snapshotId)) ?? '', snapshotId);
        const chunk = manifest.files['checkpoint.img']!.chunks[1]!;
        const bytes = Buffer.from(await store.getChunk(chunk.sha256, chunk.sizeBytes));
        bytes[12345] ^= 0xff;
        await store.putChunk(chunk.sha256, bytes); // same name, other bytes
      },
      storedBytes: async () => (await store.usage()).bytes,
      collectGarbage: async () => {
        const collected = await storage.collectGarbage({ olderThanMs: 0 });
        return collected && { deleted: collected.deleted.length };
      },
    },
  };
}

snapshotStorageConformance({ name: 'S3 (s3rver) behind a local cache', create: (options) => tiered(options), remoteServer: s3 });

describe('a downloaded image is sealed in the cache later (sealDelayMs)', () => {
  const image = { 'checkpoint.img': randomBytes(3 * 1024 * 1024), 'pages.img': randomBytes(1024 * 1024) };
  const host = async (prefix: string): Promise<TieredSnapshotStorage> => {
    const storage = new TieredSnapshotStorage({ rootDir: await freshDir(), store: new S3ChunkStore(s3.connection(prefix)), sealDelayMs: 3_600_000 });
    await storage.start();
    return storage;
  };
  const uploaded = async (prefix: string, snapshotId: string): Promise<void> => {
    const first = await host(prefix);
    await writeAndCommit(first, snapshotId, image);
    await waitDurable(first, snapshotId);
    await first.close();
  };

  it('an open answers before the seal, and close seals at once', async () => {
    await uploaded('seal-close/', 'snap-seal-close');
    const other = await host('seal-close/');
    await assertOpensAs(other, 'snap-seal-close', image);
    assert.deepEqual(await other.local.list(), [], 'not sealed yet: no local manifest');
    await other.close();
    assert.deepEqual(await other.local.list(), ['snap-seal-close']);
    const again = new LocalSnapshotStorage({ rootDir: other.local.rootDir });
    await assertOpensAs(again, 'snap-seal-close', image);
  });

  it('a remove before the seal drops the image without waiting for the seal', async () => {
    await uploaded('seal-remove/', 'snap-seal-remove');
    const other = await host('seal-remove/');
    await other.open('snap-seal-remove');
    await other.remove('snap-seal-remove'); // would wait the hour's delay if it waited for the seal
    assert.deepEqual(await other.local.list(), []);
    await assert.rejects(other.open('snap-seal-remove'), assertCode('SNAPSHOT_NOT_FOUND'));
    await other.close();
  });
});
