/** Finding the root block device and its size from (fixture) /proc and /sys trees; the no-op paths of growing it. */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { growRootFilesystem, readRootDisk } from './root-disk.js';

const dir = mkdtempSync(join(tmpdir(), 'ramify-root-disk-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function fixture(name: string, mountinfo: string, sizes: Record<string, number>): { proc: string; sys: string } {
  const proc = join(dir, name, 'proc');
  const sys = join(dir, name, 'sys');
  mkdirSync(join(proc, 'self'), { recursive: true });
  writeFileSync(join(proc, 'self', 'mountinfo'), mountinfo);
  for (const [dev, sectors] of Object.entries(sizes)) {
    mkdirSync(join(sys, 'dev', 'block', dev), { recursive: true });
    writeFileSync(join(sys, 'dev', 'block', dev, 'size'), `${sectors}\n`);
  }
  return { proc, sys };
}

test('a microVM root on /dev/vda: its device and size in bytes', () => {
  const { proc, sys } = fixture('vm', [
    '22 1 254:0 / / rw,noatime shared:1 - ext4 /dev/vda rw',
    '23 22 0:5 / /dev rw,nosuid shared:2 - devtmpfs devtmpfs rw,size=4k',
    '24 22 0:21 / /proc rw - proc proc rw',
  ].join('\n'), { '254:0': 4_194_304 });
  assert.deepEqual(readRootDisk(proc, sys), { device: '/dev/vda', devNumber: '254:0', sizeBytes: 4_194_304 * 512 });
});

test('a gVisor root (no block device under /) has no disk; neither has a missing /proc', () => {
  const { proc, sys } = fixture('gvisor', '1 0 0:1 / / rw - 9p none rw,trans=fd\n2 1 0:2 / /proc rw - proc proc rw', {});
  assert.equal(readRootDisk(proc, sys), undefined);
  assert.equal(readRootDisk(join(dir, 'nowhere'), sys), undefined);
});

test('growing is a no-op without a root disk, or when the filesystem already fills the size asked for', async () => {
  assert.equal(await growRootFilesystem(4096, 2048, undefined), 2048);
  const root = { device: '/dev/vda', devNumber: '254:0', sizeBytes: 4096 };
  assert.equal(await growRootFilesystem(4096, 4096, root), 4096);
  assert.equal(await growRootFilesystem(2048, 4096, root), 4096);
});
