import { isRamifyError } from '@ramify/contracts';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LayerCache } from './layer-cache.js';
import { removeTreeSafely } from './safe-remove.js';

let work: string;
before(async () => {
  work = await mkdtemp(join(tmpdir(), 'ramify-layercache-test-'));
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

const KEY = 'f'.repeat(64);

describe('LayerCache', () => {
  it('builds a layer once, then serves it from the cache; concurrent requests share one build', async () => {
    const cache = new LayerCache(join(work, 'a'));
    let builds = 0;
    const build = async (dir: string): Promise<void> => {
      builds += 1;
      await mkdir(join(dir, 'etc'), { recursive: true });
      await writeFile(join(dir, 'etc', 'hello'), 'hello');
    };
    const [first, second] = await Promise.all([cache.ensure('rootfs', KEY, { why: 'test' }, build), cache.ensure('rootfs', KEY, {}, build)]);
    assert.equal(builds, 1);
    assert.equal(first.cached, false);
    assert.equal(second.layer.rootfsDir, first.layer.rootfsDir);
    assert.equal(first.layer.rootfsDir, join(work, 'a', 'layers', `rootfs-${KEY}`, 'rootfs'));
    assert.ok(first.layer.sizeBytes >= 5);
    const again = await cache.ensure('rootfs', KEY, {}, build);
    assert.equal(again.cached, true);
    assert.equal(builds, 1);
    assert.deepEqual(await cache.get('files', KEY), null);
  });

  it('a failed build leaves nothing behind', async () => {
    const cache = new LayerCache(join(work, 'b'));
    await assert.rejects(
      cache.ensure('files', KEY, {}, async (dir) => {
        await mkdir(dir);
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.deepEqual(await readdir(cache.layersDir), []);
    assert.equal(await cache.get('files', KEY), null);
  });

  it('sweeps temporary directories of dead builds', async () => {
    const cache = new LayerCache(join(work, 'c'));
    await mkdir(join(cache.layersDir, `.tmp-rootfs-${KEY}-dead`, 'rootfs'), { recursive: true });
    assert.deepEqual(await cache.sweepTemporary(), [`.tmp-rootfs-${KEY}-dead`]);
    assert.deepEqual(await readdir(cache.layersDir), []);
  });

  it('stores and loads flattened specs by hash', async () => {
    const cache = new LayerCache(join(work, 'd'));
    await cache.saveSpec(KEY, { name: 'x', packages: ['jq'] });
    assert.deepEqual(await cache.loadSpec(KEY), { name: 'x', packages: ['jq'] });
    assert.equal(await cache.loadSpec('0'.repeat(64)), null);
    assert.equal(await cache.loadSpec('../etc/passwd'), null);
  });
});

describe('removeTreeSafely', { skip: process.getuid?.() === 0 ? false : 'needs root to mount a tmpfs' }, () => {
  it('refuses to delete a tree with a mount inside, and deletes it once unmounted', async () => {
    const dir = join(work, 'mounted');
    const inner = join(dir, 'proc-like');
    await mkdir(inner, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', 'tmpfs', inner]);
    try {
      await writeFile(join(inner, 'precious'), 'x');
      await assert.rejects(removeTreeSafely(dir), (error) => isRamifyError(error) && /still mounted below it/.test(error.message));
      assert.deepEqual(await readdir(inner), ['precious']);
    } finally {
      execFileSync('umount', [inner]);
    }
    await removeTreeSafely(dir);
    await assert.rejects(readdir(dir), /ENOENT/);
  });
});
