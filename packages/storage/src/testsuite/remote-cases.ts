/**
 * Conformance cases of a remote tier (the `uploadState` capability): durability, opens on a cold
 * cache, end-to-end checksums, outages, restarts, dedup and removal. Skipped, with the reason, for a
 * harness without one.
 */
import type { SnapshotStorage, SnapshotUploadState } from '@ramify/core';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { it } from 'node:test';
import { DEFAULT_CHUNKING } from '../tiered/chunker.js';
import type { CreateOptions, RemoteControls, StorageHarness, StorageUnderTest } from './harness.js';
import { assertCode, assertOpensAs, readImageFiles, sampleImage, writeAndCommit, type ImageFiles } from './image-files.js';

const NO_REMOTE = 'local disk only: no remote tier';

/** Poll `check` until it returns a value (not undefined), or fail after `timeoutMs`. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Wait until `snapshotId` is durable; returns its state. */
export async function waitDurable(storage: SnapshotStorage, snapshotId: string, timeoutMs = 30_000): Promise<SnapshotUploadState> {
  assert.ok(storage.uploadState, 'the storage declares the uploadState capability');
  return eventually(`${snapshotId} to be durable`, async () => {
    const state = await storage.uploadState!(snapshotId);
    return state.state === 'durable' ? state : undefined;
  }, timeoutMs);
}

export function remoteTierCases(harness: StorageHarness, opened: StorageUnderTest[]): void {
  const server = harness.remoteServer;
  const skip = server ? false : NO_REMOTE;
  const track = async (under: Promise<StorageUnderTest>): Promise<StorageUnderTest> => {
    const value = await under;
    opened.push(value);
    return value;
  };
  /** A fresh storage with its remote controls. */
  const create = async (options?: CreateOptions): Promise<{ storage: SnapshotStorage; remote: RemoteControls; under: StorageUnderTest }> => {
    const under = await track(harness.create(options));
    assert.ok(under.remote, `${harness.name} has a remote server but its storage has no remote controls`);
    return { storage: under.storage, remote: under.remote, under };
  };
  const otherHost = async (remote: RemoteControls): Promise<SnapshotStorage> => (await track(remote.otherHost())).storage;

  it('an upload makes a snapshot durable, and another host opens it byte for byte (zeros stay holes)', { skip }, async () => {
    const { storage, remote } = await create();
    const files: ImageFiles = { ...sampleImage(), ram: Buffer.concat([Buffer.alloc(16 * 1024 * 1024), Buffer.from('tail')]) };
    await writeAndCommit(storage, 'snap-durable', files, 'snap-template');
    assert.match((await storage.uploadState!('snap-durable')).state, /^(pending|uploading|durable)$/);
    const durable = await waitDurable(storage, 'snap-durable');
    assert.ok(durable.durableAt && !Number.isNaN(Date.parse(durable.durableAt)));
    const other = await otherHost(remote);
    assert.deepEqual(await other.list(), ['snap-durable']);
    assert.equal((await other.uploadState!('snap-durable')).state, 'durable');
    await assertOpensAs(other, 'snap-durable', files);
    const { imageDir, manifest } = await other.open('snap-durable');
    assert.equal(manifest.parentSnapshotId, 'snap-template');
    assert.ok(Object.values(manifest.files).every((file) => file.sha256 !== null), 'a downloaded manifest has every sha256');
    const ram = await stat(join(imageDir, 'ram'));
    assert.ok(ram.blocks * 512 < ram.size / 2, `zero chunks are holes (${ram.blocks * 512} bytes allocated of ${ram.size})`);
    await assert.rejects(other.uploadState!('snap-never'), assertCode('SNAPSHOT_NOT_FOUND'));
  });

  it('a copy evicted by the cache budget is downloaded again on open', { skip }, async () => {
    const { storage, remote } = await create({ cacheBudgetBytes: 0 });
    const files = sampleImage();
    await writeAndCommit(storage, 'snap-evicted', files);
    await waitDurable(storage, 'snap-evicted');
    await eventually('the local copy to be evicted', async () => ((await remote.isCached('snap-evicted')) ? undefined : true));
    assert.deepEqual(await storage.list(), ['snap-evicted']);
    assert.equal((await storage.uploadState!('snap-evicted')).state, 'durable');
    await assertOpensAs(storage, 'snap-evicted', files);
    await eventually('the downloaded copy to be sealed in the cache (and kept during the open grace)', async () => ((await remote.isCached('snap-evicted')) ? true : undefined));
  });

  it('a corrupt chunk in the bucket is detected on download, and nothing corrupt is cached', { skip }, async () => {
    const { storage, remote } = await create();
    const files = sampleImage();
    await writeAndCommit(storage, 'snap-corrupt', files);
    await waitDurable(storage, 'snap-corrupt');
    await remote.corruptChunk('snap-corrupt');
    const other = await track(remote.otherHost());
    for (let attempt = 0; attempt < 2; attempt++) {
      await assert.rejects(other.storage.open('snap-corrupt'), (error) => {
        assertCode('RUNTIME_ERROR', /snapshot 'snap-corrupt' is corrupt in the bucket: checkpoint\.img: chunk [0-9a-f]{64} in the bucket is corrupt/)(error);
        assert.equal((error as { details?: { reason?: string } }).details?.reason, 'checksum-mismatch');
        return true;
      });
      assert.equal(await other.remote!.isCached('snap-corrupt'), false);
    }
    await assertOpensAs(storage, 'snap-corrupt', files); // the first host's local copy is intact
  });

  it('openArriving answers once the files exist at their sizes; arriving resolves once their bytes are checked, or rejects for a corrupt chunk and caches nothing', { skip }, async () => {
    const { storage, remote } = await create();
    const files = sampleImage();
    await writeAndCommit(storage, 'snap-arriving', files);
    await writeAndCommit(storage, 'snap-arriving-corrupt', sampleImage());
    await waitDurable(storage, 'snap-arriving');
    await waitDurable(storage, 'snap-arriving-corrupt');
    await remote.corruptChunk('snap-arriving-corrupt');
    const { storage: other, remote: otherRemote } = await track(remote.otherHost());
    assert.ok(other.openArriving, 'a storage with a remote tier has openArriving');
    const opened = await other.openArriving('snap-arriving');
    assert.ok(opened.arriving, 'an image not cached here is still arriving');
    for (const [path, data] of Object.entries(files)) assert.equal((await stat(join(opened.imageDir, path))).size, data.length, `${path}: at its full size at once`);
    await opened.arriving;
    const actual = await readImageFiles(opened.imageDir);
    for (const [path, data] of Object.entries(files)) assert.ok(actual[path]!.equals(data), `${path}: bytes once arrived`);
    await eventually('the downloaded copy to be sealed in the cache', async () => ((await otherRemote!.isCached('snap-arriving')) ? true : undefined));
    assert.equal((await other.openArriving('snap-arriving')).arriving, undefined, 'a cached image has nothing arriving');
    const corrupt = await other.openArriving('snap-arriving-corrupt');
    await assert.rejects(corrupt.arriving!, assertCode('RUNTIME_ERROR', /snapshot 'snap-arriving-corrupt' is corrupt in the bucket/));
    assert.equal(await otherRemote!.isCached('snap-arriving-corrupt'), false);
    await assert.rejects(other.openArriving('snap-arriving-never'), assertCode('SNAPSHOT_NOT_FOUND'));
  });

  it('with the server down, commit succeeds locally and the upload resumes once it is back', { skip }, async () => {
    const { storage, remote } = await create();
    const files = sampleImage();
    await server!.stop();
    try {
      await writeAndCommit(storage, 'snap-outage', files);
      await assertOpensAs(storage, 'snap-outage', files);
      const failing = await eventually('a failed upload attempt', async () => {
        const state = await storage.uploadState!('snap-outage');
        return state.failedAttempts > 0 ? state : undefined;
      });
      assert.notEqual(failing.state, 'durable');
      assert.match(failing.lastError ?? '', /ECONNREFUSED/);
    } finally {
      await server!.start();
    }
    await waitDurable(storage, 'snap-outage');
    await assertOpensAs(await otherHost(remote), 'snap-outage', files);
  });

  it('an upload cut short by a restart resumes in the next instance', { skip }, async () => {
    const first = await harness.create();
    const files = sampleImage();
    await server!.stop();
    try {
      await writeAndCommit(first.storage, 'snap-restart', files);
    } finally {
      await first.close();
      await server!.start();
    }
    const second = await track(first.remote!.restart());
    await waitDurable(second.storage, 'snap-restart');
    await assertOpensAs(await otherHost(second.remote!), 'snap-restart', files);
  });

  it('chunks shared by two images (a parent and its fork) are stored once', { skip }, async () => {
    const { storage, remote } = await create();
    const shared = randomBytes(32 * 1024 * 1024);
    const parent = Buffer.concat([shared, randomBytes(1024 * 1024)]);
    const fork = Buffer.concat([randomBytes(100), shared, randomBytes(1024 * 1024)]); // shifted: content-defined cuts realign
    await writeAndCommit(storage, 'snap-dedup-parent', { 'checkpoint.img': parent });
    await waitDurable(storage, 'snap-dedup-parent');
    const before = await remote.storedBytes();
    await writeAndCommit(storage, 'snap-dedup-fork', { 'checkpoint.img': fork }, 'snap-dedup-parent');
    await waitDurable(storage, 'snap-dedup-fork');
    const added = (await remote.storedBytes()) - before;
    // Its own 1 MiB, plus at most one chunk (maxBytes at most) on each side of the shared region.
    assert.ok(added < 1024 * 1024 + 2 * DEFAULT_CHUNKING.maxBytes, `the fork added ${added} bytes for its ~1 MiB of its own (image ${fork.length} bytes)`);
    await assertOpensAs(await otherHost(remote), 'snap-dedup-fork', { 'checkpoint.img': fork });
  });

  it('remove deletes a snapshot from the bucket; garbage collection keeps chunks others share', { skip }, async () => {
    const { storage, remote } = await create();
    const shared = randomBytes(2 * DEFAULT_CHUNKING.maxBytes);
    const kept = { 'checkpoint.img': Buffer.concat([shared, randomBytes(4 * 1024 * 1024)]) };
    await writeAndCommit(storage, 'snap-removed', { 'checkpoint.img': Buffer.concat([shared, randomBytes(4 * 1024 * 1024)]) });
    await writeAndCommit(storage, 'snap-kept', kept);
    await waitDurable(storage, 'snap-removed');
    await waitDurable(storage, 'snap-kept');
    await storage.remove('snap-removed');
    assert.deepEqual(await storage.list(), ['snap-kept']);
    await assert.rejects(storage.uploadState!('snap-removed'), assertCode('SNAPSHOT_NOT_FOUND'));
    const other = await otherHost(remote);
    await eventually('the remote manifest to be deleted', async () => ((await other.list()).includes('snap-removed') ? undefined : true));
    await assert.rejects(other.open('snap-removed'), assertCode('SNAPSHOT_NOT_FOUND'));
    const before = await remote.storedBytes();
    const collected = await eventually('garbage collection', async () => (await remote.collectGarbage()) ?? undefined);
    assert.ok(collected.deleted > 0, 'the removed image\'s own chunks');
    const freed = before - (await remote.storedBytes());
    assert.ok(freed > 0 && freed < 4 * 1024 * 1024 + DEFAULT_CHUNKING.maxBytes, `freed ${freed} bytes: its own 4 MiB and at most one chunk it shared only partly`);
    await assertOpensAs(await otherHost(remote), 'snap-kept', kept);
  });
}
