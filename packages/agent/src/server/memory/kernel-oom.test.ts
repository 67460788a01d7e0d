/** Reading the kernel's OOM reports (microVM guests): the log line and the kill counter, on synthetic files. */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KernelOomWatcher, parseKernelKill, readOomKillCount, type KernelKill } from './kernel-oom.js';

const dirs: string[] = [];
/** A temporary directory, removed after the file's tests. */
const tempDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'ramify-kernel-oom-'));
  dirs.push(dir);
  return dir;
};
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

test("parses the kernel's kill report, from /dev/kmsg or dmesg", () => {
  // As read from /dev/kmsg: one record, ending in a newline (measured on Debian's 6.1 guest kernel).
  const kmsg = '3,1187,53211312,-;Out of memory: Killed process 312 (python3) total-vm:612344kB, anon-rss:480120kB, file-rss:4kB, shmem-rss:16kB, UID:0 pgtables:1020kB oom_score_adj:0\n';
  assert.deepEqual(parseKernelKill(kmsg), { pid: 312, name: 'python3', rssBytes: (480120 + 4 + 16) * 1024 });
  assert.deepEqual(parseKernelKill('[ 12.3] Memory cgroup out of memory: Killed process 77 (a b) total-vm:1kB'), { pid: 77, name: 'a b', rssBytes: null });
  assert.equal(parseKernelKill('6,1,2,-;virtio_net virtio0 eth0: renamed'), undefined);
});

test('reads the oom_kill counter; none where the kernel does not count (gVisor)', () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'vmstat'), 'nr_free_pages 1\noom_kill 3\nnr_foo 2\n');
  assert.equal(readOomKillCount(dir), 3);
  writeFileSync(join(dir, 'vmstat'), 'nr_free_pages 1\n');
  assert.equal(readOomKillCount(dir), null);
});

test('a counted kill whose log cannot be read is reported unattributed', () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'vmstat'), 'oom_kill 0\n');
  const kills: Array<KernelKill | 'unattributed'> = [];
  const watcher = new KernelOomWatcher({ onKill: (k) => kills.push(k), log: () => undefined, procDir: dir, kmsgPath: join(dir, 'no-kmsg'), pollMs: 60_000 });
  assert.equal(watcher.start(), true);
  watcher.check();
  assert.deepEqual(kills, []);
  writeFileSync(join(dir, 'vmstat'), 'oom_kill 2\n');
  watcher.check();
  assert.deepEqual(kills, ['unattributed', 'unattributed']);
  watcher.stop();
});
