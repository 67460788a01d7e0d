/**
 * Conformance: the root disk per sandbox (`diskSizeMB`). A runtime with a disk of its own (the microVM)
 * gives each sandbox the size it asked for, at least its image's: the root filesystem fills it, and a
 * fork or a pause/resume keeps it; a size below the image's is refused with 400 and leaves nothing.
 * A runtime without one (gVisor: file changes live in the sandbox's memory) refuses `diskSizeMB` with a
 * clear 400 naming the field.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { Sandbox } from '@ramify/sdk';
import type { SuiteContext } from '../context.js';
import { rejectsWithCode, sh } from '../support.js';

/** Size of `/` as `df` reports it, MiB (a filesystem's own overhead makes it a little less than its disk). */
async function rootFilesystemMB(sbx: Sandbox): Promise<number> {
  return Number((await sh(sbx, 'df -B1M --output=size / | tail -1')).trim());
}

/** ext4's own overhead (inode tables, bitmaps) on these disks is well under this share of the disk. */
const OVERHEAD_SHARE = 0.08;

function assertFills(sizeMB: number, diskMB: number, what: string): void {
  assert.ok(sizeMB <= diskMB && sizeMB >= diskMB * (1 - OVERHEAD_SHARE), `${what}: / is ${sizeMB} MiB on a ${diskMB} MiB disk`);
}

async function sandboxIds(ctx: SuiteContext): Promise<string[]> {
  return (await ctx.daemon().liveSandboxes()).map((s) => s.id).sort();
}

/** Register the `root disk` group. */
export function registerRootDiskCases(ctx: SuiteContext): void {
  describe('root disk', () => {
    after(() => ctx.killAll());
    const disk = ctx.target.rootDisk;

    test('diskSizeMB is refused with 400 naming the field on a runtime without a disk of its own', { skip: disk ? `the ${ctx.target.runtime} runtime has a disk of its own` : false }, async () => {
      const before = await sandboxIds(ctx);
      const err = await rejectsWithCode(ctx.create({ diskSizeMB: 4096 }), 'VALIDATION_FAILED');
      assert.match(err.message, /diskSizeMB/);
      assert.deepEqual(await sandboxIds(ctx), before, 'nothing was created');
    });

    test('a sandbox gets the disk size it asks for; the filesystem fills it; a fork keeps it', { skip: disk ? false : `the ${ctx.target.runtime} runtime has no disk of its own` }, async (t) => {
      const defaultMB = disk?.defaultSizeMB ?? 0;
      const plain = await ctx.create();
      assert.equal((await plain.getInfo()).diskSizeMB, defaultMB);
      assertFills(await rootFilesystemMB(plain), defaultMB, 'default size');
      await plain.kill();

      const askedMB = defaultMB + 1024;
      const sbx = await ctx.create({ diskSizeMB: askedMB });
      assert.equal((await sbx.getInfo()).diskSizeMB, askedMB);
      const grown = await rootFilesystemMB(sbx);
      t.diagnostic(`/ of a ${askedMB} MiB disk: ${grown} MiB (image's disk ${defaultMB} MiB)`);
      assertFills(grown, askedMB, 'grown disk');
      await sh(sbx, 'head -c 8M /dev/urandom > /root/kept.bin && sha256sum /root/kept.bin > /root/kept.sum');
      const [fork] = await sbx.fork({ count: 1 });
      assert.ok(fork);
      assert.equal((await fork.getInfo()).diskSizeMB, askedMB);
      assertFills(await rootFilesystemMB(fork), askedMB, 'fork');
      await sh(fork, 'sha256sum -c /root/kept.sum');
    });

    test('a paused sandbox with a grown disk resumes with it', { ...ctx.caseOptions('a paused sandbox with a grown disk resumes with it', { extended: true }), ...(disk ? {} : { skip: `the ${ctx.target.runtime} runtime has no disk of its own` }) }, async () => {
      const askedMB = (disk?.defaultSizeMB ?? 0) + 512;
      const sbx = await ctx.create({ diskSizeMB: askedMB });
      await sbx.pause();
      await sbx.resume();
      assertFills(await rootFilesystemMB(sbx), askedMB, 'after resume');
      await sh(sbx, 'head -c 1M /dev/zero > /root/after-resume.bin');
    });

    test('a disk below the image\'s, or above the most, is refused with 400; nothing is left behind', { skip: disk ? false : `the ${ctx.target.runtime} runtime has no disk of its own` }, async () => {
      const before = await sandboxIds(ctx);
      const small = await rejectsWithCode(ctx.create({ diskSizeMB: Math.max(1, (disk?.defaultSizeMB ?? 2) / 2) }), 'VALIDATION_FAILED');
      assert.match(small.message, /diskSizeMB .* below/);
      const huge = await rejectsWithCode(ctx.create({ diskSizeMB: 1_048_576 }), 'VALIDATION_FAILED');
      assert.match(huge.message, /diskSizeMB .* above/);
      assert.deepEqual(await sandboxIds(ctx), before, 'nothing was created');
    });
  });
}
