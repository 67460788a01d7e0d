import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RamifyError } from '@ramify/contracts';
import { S3ChunkStore } from '../s3/s3-chunk-store.js';
import { startLocalS3Server } from '../testsuite/local-s3-server.js';
import { waitDurable } from '../testsuite/remote-cases.js';
import { DownloadThreads } from './download-thread.js';
import { parseRemoteManifest } from './remote-manifest.js';
import { TieredSnapshotStorage } from './tiered-snapshot-storage.js';

/** An image of `bytes` random bytes made durable in a fresh bucket; its remote manifest and bytes. */
async function imageInBucket(work: string, bytes: number) {
  const s3 = await startLocalS3Server();
  const storage = new TieredSnapshotStorage({ rootDir: join(work, 'a'), store: new S3ChunkStore(s3.connection()) });
  await storage.start();
  const data = randomBytes(bytes);
  const { imageDir } = await storage.prepare('snap-t');
  await mkdir(imageDir, { recursive: true });
  await writeFile(join(imageDir, 'checkpoint.img'), data);
  await storage.commit({ snapshotId: 'snap-t', runtime: 'gvisor', templateId: 'tpl', parentSnapshotId: null });
  await waitDurable(storage, 'snap-t');
  await storage.close();
  const manifest = parseRemoteManifest((await new S3ChunkStore(s3.connection()).getManifest('snap-t'))!, 'snap-t');
  return { s3, manifest, data };
}

test('two threads download an image together, byte for byte, and tell every chunk they found', async () => {
  const work = await mkdtemp(join(tmpdir(), 'ramify-download-threads-'));
  const { s3, manifest, data } = await imageInBucket(work, 12 * 1024 * 1024);
  const threads = new DownloadThreads(s3.connection(), { count: 2 });
  try {
    threads.start();
    const seen: string[] = [];
    const result = await threads.run({ manifest, imageDir: join(work, 'b'), parallelism: 4, onSeen: (sha256) => seen.push(sha256) });
    assert.equal(result.bytes, data.length);
    assert.ok((await readFile(join(work, 'b', 'checkpoint.img'))).equals(data));
    assert.deepEqual(seen.sort(), manifest.files['checkpoint.img']!.chunks.map((c) => c.sha256).sort());
  } finally {
    await threads.close();
    await s3.close();
    await rm(work, { recursive: true, force: true });
  }
});

test('a warm-up runs the download path on a probe object and leaves nothing in the bucket', async () => {
  const s3 = await startLocalS3Server();
  const threads = new DownloadThreads(s3.connection(), { count: 2, warmUp: true });
  try {
    assert.equal(await threads.ready(), 2, 'both threads warmed up');
    assert.deepEqual(await new S3ChunkStore(s3.connection()).usage(), { objects: 0, bytes: 0 });
  } finally {
    await threads.close();
    await s3.close();
  }
});

test('an aborted download rejects with the reason; a closed thread fails its download STORAGE_UNAVAILABLE; the next one works', async () => {
  const work = await mkdtemp(join(tmpdir(), 'ramify-download-threads-'));
  const { s3, manifest, data } = await imageInBucket(work, 24 * 1024 * 1024);
  const threads = new DownloadThreads(s3.connection(), { count: 2 });
  try {
    const controller = new AbortController();
    const aborted = threads.run({ manifest, imageDir: join(work, 'b1'), parallelism: 2, onSeen: () => undefined, signal: controller.signal });
    controller.abort(new Error('stop here'));
    await assert.rejects(aborted, /stop here/);

    const closed = threads.run({ manifest, imageDir: join(work, 'b2'), parallelism: 2, onSeen: () => undefined });
    await new Promise((resolve) => setTimeout(resolve, 20));
    await threads.close();
    await assert.rejects(closed, (error) => error instanceof RamifyError && error.code === 'STORAGE_UNAVAILABLE' && /download thread exited/.test(error.message));

    await threads.run({ manifest, imageDir: join(work, 'b3'), parallelism: 4, onSeen: () => undefined });
    assert.ok((await readFile(join(work, 'b3', 'checkpoint.img'))).equals(data));
  } finally {
    await threads.close();
    await s3.close();
    await rm(work, { recursive: true, force: true });
  }
});
