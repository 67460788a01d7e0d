/**
 * The SnapshotStorage conformance suite: the port's semantics every implementation must keep
 * (prepare/commit/open/remove/list), then the remote tier's (durability, cold opens, end-to-end
 * checksums, outages, dedup, removal). Run by a test file per implementation:
 * `snapshotStorageConformance(harness)` registers the cases with node:test.
 */
import type { SnapshotStorage } from '@ramify/core';
import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { after, describe, it } from 'node:test';
import type { StorageHarness, StorageUnderTest } from './harness.js';
import { assertCode, assertOpensAs, commitInput, sampleImage, writeAndCommit, writeImageFiles } from './image-files.js';
import { remoteTierCases } from './remote-cases.js';

/** Register the whole suite for `harness`. */
export function snapshotStorageConformance(harness: StorageHarness): void {
  describe(`SnapshotStorage conformance: ${harness.name}`, () => {
    const opened: StorageUnderTest[] = [];
    const fresh = async (): Promise<SnapshotStorage> => {
      const under = await harness.create();
      opened.push(under);
      return under.storage;
    };
    after(async () => {
      for (const under of opened) await under.close();
    });

    it('prepare gives a not-yet-existing image directory whose parent exists', async () => {
      const storage = await fresh();
      const { imageDir } = await storage.prepare('snap-prepare');
      await assert.rejects(stat(imageDir), /ENOENT/);
      assert.ok((await stat(dirname(imageDir))).isDirectory());
    });

    it('commit seals the image: open gives the same files, manifest and lineage; list names it', async () => {
      const storage = await fresh();
      const files = sampleImage();
      await writeAndCommit(storage, 'snap-child', files, 'snap-parent');
      await assertOpensAs(storage, 'snap-child', files);
      const { manifest } = await storage.open('snap-child');
      assert.equal(manifest.formatVersion, 1);
      assert.equal(manifest.parentSnapshotId, 'snap-parent');
      assert.equal(manifest.runtime, 'gvisor');
      assert.equal(manifest.templateId, 'tpl_conformance');
      assert.deepEqual(await storage.list(), ['snap-child']);
    });

    it('a prepared but uncommitted snapshot is neither found nor listed', async () => {
      const storage = await fresh();
      const { imageDir } = await storage.prepare('snap-half');
      await writeImageFiles(imageDir, { 'checkpoint.img': Buffer.from('partial') });
      await assert.rejects(storage.open('snap-half'), assertCode('SNAPSHOT_NOT_FOUND'));
      assert.deepEqual(await storage.list(), []);
    });

    it('commit and prepare guard their preconditions; bad ids are refused', async () => {
      const storage = await fresh();
      await storage.prepare('snap-empty');
      await assert.rejects(storage.commit(commitInput('snap-empty')), assertCode('INVALID_STATE'));
      await writeAndCommit(storage, 'snap-done', { 'a.img': Buffer.from('x') });
      await assert.rejects(storage.commit(commitInput('snap-done')), assertCode('CONFLICT'));
      await assert.rejects(storage.prepare('snap-done'), assertCode('CONFLICT'));
      await assert.rejects(storage.prepare('../escape'), assertCode('BAD_REQUEST'));
      await assert.rejects(storage.open('../escape'), assertCode('SNAPSHOT_NOT_FOUND'));
      await assert.rejects(storage.open('snap-never'), assertCode('SNAPSHOT_NOT_FOUND'));
    });

    it('prepare clears the leftovers of an unfinished write with the same id', async () => {
      const storage = await fresh();
      const { imageDir } = await storage.prepare('snap-retry');
      await writeImageFiles(imageDir, { 'stale.img': Buffer.from('stale') });
      const again = await storage.prepare('snap-retry');
      await assert.rejects(stat(again.imageDir), /ENOENT/);
      await writeImageFiles(again.imageDir, { 'fresh.img': Buffer.from('fresh') });
      await storage.commit(commitInput('snap-retry'));
      await assertOpensAs(storage, 'snap-retry', { 'fresh.img': Buffer.from('fresh') });
    });

    it('remove deletes a snapshot, is a no-op when absent, and the id can be used again', async () => {
      const storage = await fresh();
      await writeAndCommit(storage, 'snap-gone', { 'a.img': Buffer.from('first') });
      await storage.remove('snap-gone');
      await assert.rejects(storage.open('snap-gone'), assertCode('SNAPSHOT_NOT_FOUND'));
      assert.deepEqual(await storage.list(), []);
      await storage.remove('snap-gone');
      await storage.remove('snap-never-existed');
      await storage.remove('../escape');
      await writeAndCommit(storage, 'snap-gone', { 'b.img': Buffer.from('second') });
      await assertOpensAs(storage, 'snap-gone', { 'b.img': Buffer.from('second') });
      assert.deepEqual(await storage.list(), ['snap-gone']);
    });

    it('list is sorted and empty before anything was written', async () => {
      const storage = await fresh();
      assert.deepEqual(await storage.list(), []);
      for (const id of ['snap-b', 'snap-c', 'snap-a']) await writeAndCommit(storage, id, { 'x.img': Buffer.from(id) });
      assert.deepEqual(await storage.list(), ['snap-a', 'snap-b', 'snap-c']);
    });

    remoteTierCases(harness, opened);
  });
}
