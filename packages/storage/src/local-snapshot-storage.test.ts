import { isRamifyError } from '@ramify/contracts';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LocalSnapshotStorage } from './local-snapshot-storage.js';

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'ramify-storage-test-'));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

const sha = (data: Uint8Array | string): string => createHash('sha256').update(data).digest('hex');

/** Prepare `id` and write a small two-file image like a runtime would. */
async function writeImage(storage: LocalSnapshotStorage, id: string): Promise<{ imageDir: string; big: Buffer }> {
  const { imageDir } = await storage.prepare(id);
  const big = randomBytes(3 * 1024 * 1024 + 17); // spans several read chunks
  await mkdir(join(imageDir, 'pages'), { recursive: true });
  await writeFile(join(imageDir, 'checkpoint.img'), big);
  await writeFile(join(imageDir, 'pages', 'meta.json'), '{"a":1}');
  return { imageDir, big };
}

const commitInput = (snapshotId: string) => ({ snapshotId, runtime: 'gvisor' as const, templateId: 'tpl_1', parentSnapshotId: null });

function assertCode(code: string): (error: unknown) => boolean {
  return (error) => {
    assert.ok(isRamifyError(error), `expected a RamifyError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return true;
  };
}

describe('LocalSnapshotStorage', () => {
  it('prepare returns a not-yet-existing image dir whose parent exists', async () => {
    const storage = new LocalSnapshotStorage({ rootDir: join(root, 'a') });
    const { imageDir } = await storage.prepare('snap1');
    assert.equal(imageDir, join(root, 'a', 'snapshots', 'snap1', 'image'));
    await assert.rejects(readdir(imageDir), /ENOENT/);
    assert.deepEqual(await readdir(join(imageDir, '..')), []);
  });

  it('the background hash waits hashDelayMs after a commit (a resume right after a pause does not share the CPU); a remove meanwhile drops it', async () => {
    const storage = new LocalSnapshotStorage({ rootDir: join(root, 'delay'), hashDelayMs: 600_000 });
    const { imageDir } = await writeImage(storage, 'snap1');
    await storage.commit(commitInput('snap1'));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const manifest = (): Promise<{ files: Record<string, { sha256: string | null }> }> => readFile(join(imageDir, '..', 'manifest.json'), 'utf8').then(JSON.parse);
    assert.deepEqual(Object.values((await manifest()).files).map((f) => f.sha256), [null, null], 'not hashed during the delay');
    await writeImage(storage, 'snap2');
    await storage.commit(commitInput('snap2'));
    await storage.remove('snap2'); // does not wait out the delay (the test would time out)
    await storage.settle(); // starts the waiting hash of snap1 now
    assert.ok(Object.values((await manifest()).files).every((f) => typeof f.sha256 === 'string'));
  });

  it('commit writes sizes at once and the streamed sha256 per file in the background; open returns the image', async () => {
    const storage = new LocalSnapshotStorage({ rootDir: join(root, 'b'), hashConcurrency: 2 });
    const { imageDir, big } = await writeImage(storage, 'snap1');
    const committed = await storage.commit({ ...commitInput('snap1'), parentSnapshotId: 'snap0' });
    assert.equal(committed.formatVersion, 1);
    assert.equal(committed.parentSnapshotId, 'snap0');
    assert.deepEqual(committed.files, {
      'checkpoint.img': { sizeBytes: big.length, sha256: null },
      'pages/meta.json': { sizeBytes: 7, sha256: null },
    });
    assert.equal(committed.sizeBytes, big.length + 7);
    await storage.settle();
    const onDisk = JSON.parse(await readFile(join(imageDir, '..', 'manifest.json'), 'utf8'));
    assert.deepEqual(onDisk, {
      ...committed,
      files: {
        'checkpoint.img': { sizeBytes: big.length, sha256: sha(big) },
        'pages/meta.json': { sizeBytes: 7, sha256: sha('{"a":1}') },
      },
    });
    const opened = await storage.open('snap1', { verify: 'checksums' });
    assert.equal(opened.imageDir, imageDir);
    assert.deepEqual(opened.manifest, onDisk);
    assert.deepEqual(await storage.list(), ['snap1']);
  });

  it('a prepared but uncommitted snapshot is not found, not listed, and swept only when not in flight', async () => {
    const rootDir = join(root, 'c');
    const storage = new LocalSnapshotStorage({ rootDir });
    await writeImage(storage, 'half');
    await writeImage(storage, 'whole');
    await storage.commit(commitInput('whole'));
    await assert.rejects(storage.open('half'), assertCode('SNAPSHOT_NOT_FOUND'));
    assert.deepEqual(await storage.list(), ['whole']);
    assert.deepEqual(await storage.sweepIncomplete(), [], 'in flight in this instance: kept');
    // A new instance (as after a daemon restart) sees a leftover.
    const restarted = new LocalSnapshotStorage({ rootDir });
    assert.deepEqual(await restarted.sweepIncomplete({ olderThanMs: 3_600_000 }), [], 'too recent');
    assert.deepEqual(await restarted.sweepIncomplete(), ['half']);
    assert.deepEqual(await readdir(join(rootDir, 'snapshots')), ['whole']);
    assert.deepEqual(await restarted.list(), ['whole']);
  });

  it('default open checks sizes; checksums are checked on request', async () => {
    const storage = new LocalSnapshotStorage({ rootDir: join(root, 'd') });
    const { imageDir, big } = await writeImage(storage, 's');
    await storage.commit(commitInput('s'));
    await storage.settle(); // the background hash of the intact image
    // Same size, different bytes: only a checksum verification notices.
    const flipped = Buffer.from(big);
    flipped[1000] ^= 0xff;
    await writeFile(join(imageDir, 'checkpoint.img'), flipped);
    await storage.open('s');
    await assert.rejects(storage.open('s', { verify: 'checksums' }), (error) => {
      assertCode('RUNTIME_ERROR')(error);
      assert.match((error as Error).message, /corrupt: checkpoint\.img: sha256/);
      return true;
    });
    await truncate(join(imageDir, 'checkpoint.img'), 10);
    await assert.rejects(storage.open('s'), /corrupt: checkpoint\.img: size 10 bytes/);
    await storage.open('s', { verify: 'none' });
    await writeFile(join(imageDir, 'checkpoint.img'), big);
    await rm(join(imageDir, 'pages', 'meta.json'));
    await assert.rejects(storage.open('s', { verify: 'sizes' }), /pages\/meta\.json: missing/);
  });

  it('removing a snapshot while its hashes are computed leaves nothing behind', async () => {
    const storage = new LocalSnapshotStorage({ rootDir: join(root, 'rm-while-hashing') });
    const { imageDir } = await writeImage(storage, 'gone');
    await storage.commit(commitInput('gone'));
    await storage.remove('gone');
    await storage.settle();
    await assert.rejects(storage.open('gone'), assertCode('SNAPSHOT_NOT_FOUND'));
    await assert.rejects(readFile(join(imageDir, '..', 'manifest.json')), /ENOENT/);
  });

  it('rejects an unknown manifest format version with a clear error', async () => {
    const storage = new LocalSnapshotStorage({ rootDir: join(root, 'e') });
    const { imageDir } = await writeImage(storage, 'v9');
    const manifest = await storage.commit(commitInput('v9'));
    await storage.settle();
    await writeFile(join(imageDir, '..', 'manifest.json'), JSON.stringify({ ...manifest, formatVersion: 9 }));
    await assert.rejects(storage.open('v9'), (error) => {
      assertCode('RUNTIME_ERROR')(error);
      assert.match((error as Error).message, /unsupported manifest format version 9 \(this Ramify reads version 1 only\)/);
      return true;
    });
    await writeFile(join(imageDir, '..', 'manifest.json'), '{not json');
    await assert.rejects(storage.open('v9'), /manifest is not valid JSON/);
    await writeFile(join(imageDir, '..', 'manifest.json'), JSON.stringify({ ...manifest, sizeBytes: 'x' }));
    await assert.rejects(storage.open('v9'), /invalid manifest at sizeBytes/);
  });

  // Preconditions of prepare/commit/open and reuse of an unfinished id: the conformance suite
  // (snapshot-storage-conformance.test.ts) checks them for every implementation.

  it('remove deletes a snapshot and is a no-op when absent', async () => {
    const storage = new LocalSnapshotStorage({ rootDir: join(root, 'h') });
    await writeImage(storage, 'gone');
    await storage.commit(commitInput('gone'));
    await storage.remove('gone');
    await storage.remove('gone');
    await storage.remove('never-existed');
    assert.deepEqual(await storage.list(), []);
    assert.deepEqual(await readdir(join(root, 'h', 'snapshots')), []);
  });

  it('list is empty before anything was written', async () => {
    const storage = new LocalSnapshotStorage({ rootDir: join(root, 'nothing-here') });
    assert.deepEqual(await storage.list(), []);
    assert.deepEqual(await storage.sweepIncomplete(), []);
  });
});
