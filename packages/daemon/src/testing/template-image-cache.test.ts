/**
 * The test template image cache against a real gVisor runtime's identity (`runsc --version`, no sandbox
 * is booted) and a real local snapshot storage: the first registration builds, the next ones copy the
 * cached files in, a damaged entry is detected and rebuilt, and `RAMIFY_TEST_IMAGE_CACHE=off` builds.
 * The build step here writes known bytes through the storage as `buildImage` does after its checkpoint.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { SnapshotManifest } from '@ramify/core';
import { GvisorRuntime } from '@ramify/runtime-gvisor';
import { LocalSnapshotStorage } from '@ramify/storage';
import { cachedTemplateImage } from './template-image-cache.js';

const runscSkip = spawnSync('sh', ['-c', 'command -v runsc']).status === 0 ? false : 'runsc is not installed';
const resources = { cpuCount: 1, memoryMB: 1024, diskSizeMB: null };

describe('test template image cache', { skip: runscSkip }, () => {
  let dir: string;
  let runtime: GvisorRuntime;
  let previous: { cacheDir?: string; switch?: string };
  let n = 0;
  let builds = 0;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ramify-tic-'));
    previous = { cacheDir: process.env.RAMIFY_CACHE_DIR, switch: process.env.RAMIFY_TEST_IMAGE_CACHE };
    process.env.RAMIFY_CACHE_DIR = join(dir, 'cache');
    await writeFile(join(dir, 'resolv.conf'), 'nameserver 127.0.0.1\n');
    runtime = await GvisorRuntime.open({ workDir: join(dir, 'runtime'), resolvConfPath: join(dir, 'resolv.conf'), cgroupParent: null });
  });
  after(async () => {
    for (const [name, value] of [['RAMIFY_CACHE_DIR', previous.cacheDir], ['RAMIFY_TEST_IMAGE_CACHE', previous.switch]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await rm(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    delete process.env.RAMIFY_TEST_IMAGE_CACHE;
  });

  /** Register the image of `rootfsDir` in a fresh storage (a daemon of its own); returns the storage and its manifest. */
  async function register(rootfsDir: string): Promise<{ storage: LocalSnapshotStorage; manifest: SnapshotManifest; snapshotId: string }> {
    const storage = new LocalSnapshotStorage({ rootDir: join(dir, `daemon-${++n}`) });
    const snapshotId = `snap_${n}`;
    const manifest = await cachedTemplateImage({ runtimes: [runtime], storage }, { rootfsDir, snapshotId, templateId: `tpl_${n}`, resources }, async () => {
      builds++;
      const { imageDir } = await storage.prepare(snapshotId);
      await mkdir(join(imageDir, 'sub'), { recursive: true });
      await writeFile(join(imageDir, 'checkpoint.img'), `image of ${rootfsDir} built by daemon ${n}`);
      await writeFile(join(imageDir, 'sub', 'stamp.json'), '{"runsc":"x"}');
      return storage.commit({ snapshotId, runtime: 'gvisor', templateId: `tpl_${n}`, parentSnapshotId: null });
    });
    return { storage, manifest, snapshotId };
  }

  async function imageText(storage: LocalSnapshotStorage, snapshotId: string): Promise<string> {
    const { imageDir } = await storage.open(snapshotId, { verify: 'sizes' });
    return readFile(join(imageDir, 'checkpoint.img'), 'utf8');
  }

  async function entryDirs(): Promise<string[]> {
    return (await readdir(join(dir, 'cache', 'test-template-images'))).filter((name) => !name.startsWith('.'));
  }

  it('builds once per key, then copies the cached image into each storage and commits it there', async () => {
    builds = 0;
    const first = await register('/rootfs/a');
    const second = await register('/rootfs/a');
    assert.equal(builds, 1);
    assert.equal(await imageText(second.storage, second.snapshotId), await imageText(first.storage, first.snapshotId));
    assert.deepEqual(await second.storage.list(), [second.snapshotId]);
    assert.equal(second.manifest.sizeBytes, first.manifest.sizeBytes);
    assert.deepEqual(Object.keys(second.manifest.files), ['checkpoint.img', 'sub/stamp.json']);
    await register('/rootfs/b'); // another rootfs is another key
    assert.equal(builds, 2);
    assert.equal((await entryDirs()).length, 2);
  });

  it('detects a damaged entry, builds instead, and caches the new image', async () => {
    builds = 0;
    const first = await register('/rootfs/c');
    for (const name of await entryDirs()) {
      const file = join(dir, 'cache', 'test-template-images', name, 'image', 'checkpoint.img');
      if ((await readFile(file, 'utf8')).includes('/rootfs/c')) await writeFile(file, 'image of /rootfs/c built by daemon X'); // same size, other bytes
    }
    const second = await register('/rootfs/c');
    assert.equal(builds, 2, 'the damaged entry was not used');
    assert.notEqual(await imageText(second.storage, second.snapshotId), await imageText(first.storage, first.snapshotId));
    const third = await register('/rootfs/c');
    assert.equal(builds, 2, 'the rebuilt image was cached');
    assert.equal(await imageText(third.storage, third.snapshotId), await imageText(second.storage, second.snapshotId));
  });

  it('deletes entries unused for two weeks and leftovers of dead writers when it stores one', async () => {
    const root = join(dir, 'cache', 'test-template-images');
    await register('/rootfs/e');
    const [old] = await entryDirs();
    assert.ok(old);
    const longAgo = new Date(Date.now() - 15 * 24 * 3600_000);
    for (const name of await entryDirs()) await utimes(join(root, name, 'manifest.json'), longAgo, longAgo);
    await mkdir(join(root, '.tmp-dead'));
    await utimes(join(root, '.tmp-dead'), longAgo, longAgo);
    await mkdir(join(root, '.tmp-live'));
    await register('/rootfs/f');
    assert.deepEqual((await readdir(root)).filter((name) => name.startsWith('.')), ['.tmp-live']);
    assert.equal((await entryDirs()).length, 1, 'only the new entry is left');
  });

  it('two registrations that miss at once both build; one entry is kept and the next registration copies it', async () => {
    builds = 0;
    const [a, b] = await Promise.all([register('/rootfs/g'), register('/rootfs/g')]);
    assert.equal(builds, 2);
    const c = await register('/rootfs/g');
    assert.equal(builds, 2);
    assert.ok([await imageText(a.storage, a.snapshotId), await imageText(b.storage, b.snapshotId)].includes(await imageText(c.storage, c.snapshotId)));
    const root = join(dir, 'cache', 'test-template-images');
    assert.deepEqual((await readdir(root)).filter((name) => name.startsWith('.tmp-') && name !== '.tmp-live'), [], 'the loser dropped its temp directory');
  });

  it('builds every time with RAMIFY_TEST_IMAGE_CACHE=off', async () => {
    process.env.RAMIFY_TEST_IMAGE_CACHE = 'off';
    builds = 0;
    await register('/rootfs/d');
    await register('/rootfs/d');
    assert.equal(builds, 2);
  });
});
