/**
 * Conformance: files. Empty and 200 MB files round-trip exactly (streamed from and to disk), names with
 * spaces and non-ASCII characters work, and list/stat/mkdir/remove/rename behave.
 */
import assert from 'node:assert/strict';
import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Sandbox } from '@ramify/sdk';
import type { SuiteContext } from '../context.js';
import { rejectsWithCode, sandboxSha256, sh, shellQuote, streamToFile, writeRandomFile } from '../support.js';

const MiB = 1 << 20;

/** Known bug, see the case. */
/** Register the `files` group. */
export function registerFileCases(ctx: SuiteContext): void {
  describe('files', () => {
    let sbx: Sandbox;
    before(async () => {
      // The sandbox's file changes live in its memory: leave room for the 200 MB file.
      sbx = await ctx.create({ memoryMB: 1024 });
    });
    after(() => ctx.killAll());

    test('an empty file round-trips', async () => {
      const info = await sbx.files.write('/tmp/empty', '');
      assert.equal(info.size, 0);
      assert.equal(info.type, 'file');
      assert.equal(await sbx.files.read('/tmp/empty'), '');
      assert.equal((await sbx.files.read('/tmp/empty', { format: 'bytes' })).byteLength, 0);
      assert.equal((await sh(sbx, 'stat -c %s /tmp/empty')).trim(), '0');
    });

    const big = 'a 200 MB file round-trips exactly, streamed from and to disk';
    test(big, ctx.caseOptions(big, { extended: true }), async () => {
      const size = 200 * MiB;
      const dir = ctx.daemon().tempDir;
      const upload = join(dir, 'upload-200m.bin');
      const download = join(dir, 'download-200m.bin');
      try {
        const expected = await writeRandomFile(upload, size);
        const info = await sbx.files.write('/tmp/big.bin', createReadStream(upload, { highWaterMark: MiB }));
        assert.equal(info.size, size);
        assert.equal(await sandboxSha256(sbx, '/tmp/big.bin'), expected, 'the sandbox holds the exact bytes');
        const got = await streamToFile(await sbx.files.read('/tmp/big.bin', { format: 'stream' }), download);
        assert.equal(got.bytes, size);
        assert.equal(got.sha256, expected, 'the download is byte-exact');
      } finally {
        await rm(upload, { force: true });
        await rm(download, { force: true });
        await sh(sbx, 'rm -f /tmp/big.bin').catch(() => undefined);
      }
    });

    test('names with spaces and non-ASCII characters', async () => {
      const dir = '/tmp/dir with space/ünïcødé 目录';
      const path = `${dir}/naïve file 😀.txt`;
      const content = 'grüße, 世界 😀\n';
      const info = await sbx.files.write(path, content);
      assert.equal(info.name, 'naïve file 😀.txt');
      assert.equal(info.path, path);
      assert.equal(await sbx.files.read(path), content);
      assert.equal(await sh(sbx, `cat ${shellQuote(path)}`), content, 'the same bytes seen from a command');
      const names = (await sbx.files.list(dir)).map((e) => e.name);
      assert.deepEqual(names, ['naïve file 😀.txt']);
      await sh(sbx, `printf x > ${shellQuote(`${dir}/made by bash ✓`)}`);
      assert.equal(await sbx.files.read(`${dir}/made by bash ✓`), 'x');
      const renamed = await sbx.files.rename(path, `${dir}/renamed ✓.txt`);
      assert.equal(renamed.name, 'renamed ✓.txt');
      assert.equal(await sbx.files.exists(path), false);
    });

    test('list, stat, mkdir, remove, rename', async () => {
      assert.equal(await sbx.files.makeDir('/tmp/tree/a/b'), true);
      await sbx.files.makeDir('/tmp/tree/a/b');
      await sbx.files.write('/tmp/tree/top.txt', 'top');
      await sbx.files.write('/tmp/tree/a/b/deep.txt', 'deep');
      const top = await sbx.files.list('/tmp/tree');
      assert.deepEqual(top.map((e) => `${e.name}:${e.type}`).sort(), ['a:dir', 'top.txt:file']);
      const deep = await sbx.files.list('/tmp/tree', { depth: 3 });
      assert.ok(deep.some((e) => e.path === '/tmp/tree/a/b/deep.txt' && e.type === 'file' && e.size === 4), JSON.stringify(deep));
      const stat = await sbx.files.getInfo('/tmp/tree/a');
      assert.equal(stat.type, 'dir');
      assert.equal((await sbx.files.getInfo('/tmp/tree/top.txt')).size, 3);

      const moved = await sbx.files.rename('/tmp/tree/top.txt', '/tmp/tree/a/moved.txt');
      assert.equal(moved.path, '/tmp/tree/a/moved.txt');
      assert.equal(await sbx.files.read('/tmp/tree/a/moved.txt'), 'top');
      assert.equal(await sbx.files.exists('/tmp/tree/top.txt'), false);

      await rejectsWithCode(sbx.files.read('/tmp/tree/nope'), 'FILE_NOT_FOUND');
      await rejectsWithCode(sbx.files.getInfo('/tmp/tree/nope'), 'FILE_NOT_FOUND');
      await rejectsWithCode(sbx.files.read('/tmp/tree/a'), 'IS_A_DIRECTORY');
      await rejectsWithCode(sbx.files.list('/tmp/tree/a/moved.txt'), 'NOT_A_DIRECTORY');

      await sbx.files.remove('/tmp/tree/a');
      assert.equal(await sbx.files.exists('/tmp/tree/a'), false, 'a directory tree is removed');
      assert.equal((await sh(sbx, 'ls -A /tmp/tree')).trim(), '');
      await rejectsWithCode(sbx.files.remove('/tmp/tree/a'), 'FILE_NOT_FOUND');
    });

    test('makeDir of an existing directory resolves false', async () => {
      await sbx.files.makeDir('/tmp/exists-already');
      assert.equal(await sbx.files.makeDir('/tmp/exists-already'), false);
    });
  });
}
