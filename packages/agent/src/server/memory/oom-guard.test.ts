/**
 * The OOM guard's decisions (pure), and one guard tick on a synthetic /proc naming only real child
 * processes of this test (this process plays the agent, a child of pid 1), so it can never signal
 * anything else on the host.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sleepers } from '../../test-support/sleepers.js';
import { parseMeminfo, type MemorySample, type ProcessMemory } from './meminfo.js';
import { chooseVictim, decideOom, fastPollFromBytes, fileReserveBytes, MIN_VICTIM_RSS_BYTES, nextPollMs, OomGuard, type GuardKill } from './oom-guard.js';

const MiB = 1024 * 1024;
const L = 256 * MiB;
const R = fileReserveBytes(L);
const at = (usedMiB: number, fileMiB = 0): MemorySample => ({ limitBytes: L, usedBytes: usedMiB * MiB, fileBytes: fileMiB * MiB });
const proc = (pid: number, rssMiB: number, writtenMiB: number | null = 0): ProcessMemory => ({ pid, rssBytes: rssMiB * MiB, writtenBytes: writtenMiB === null ? null : writtenMiB * MiB });

test("reads gVisor's meminfo: MemTotal is the limit, AnonPages what is used, Shmem the files in memory", () => {
  const text = 'MemTotal:         262144 kB\nMemFree:               0 kB\nMemAvailable:          0 kB\nCached:            92804 kB\nAnonPages:        263856 kB\nMapped:            92804 kB\nShmem:            243712 kB\n';
  assert.deepEqual(parseMeminfo(text), { limitBytes: 262144 * 1024, usedBytes: 263856 * 1024, fileBytes: 243712 * 1024 });
  assert.equal(parseMeminfo('MemTotal: 1 kB\n'), undefined);
});

test('the reserve and the fast polling level scale with the limit', () => {
  assert.equal(fileReserveBytes(256 * MiB), 64 * MiB);
  assert.equal(fileReserveBytes(128 * MiB), 32 * MiB);
  assert.equal(fileReserveBytes(4096 * MiB), 64 * MiB);
  assert.equal(fastPollFromBytes(256 * MiB), 128 * MiB);
  assert.equal(fastPollFromBytes(4096 * MiB), 3072 * MiB);
});

test('polls as rarely as the fastest growth allows below the fast level, every 20 ms from it', () => {
  assert.equal(nextPollMs(at(20)), 108, '256 MiB sandbox, idle: (128 - 20) MiB at 1 MiB/ms');
  assert.equal(nextPollMs(at(127)), 20);
  assert.equal(nextPollMs(at(200)), 20);
  assert.equal(nextPollMs({ limitBytes: 4096 * MiB, usedBytes: 30 * MiB, fileBytes: 0 }), 1000);
});

test('kills only while use grows: processes past the limit, files past the limit minus the reserve, anything past limit + reserve', () => {
  assert.equal(decideOom(undefined, at(300)), null, 'no decision without a previous reading');
  assert.equal(decideOom(at(200), at(250)), null, 'below the limit, processes may grow');
  assert.equal(decideOom(at(250), at(270)), 'memory');
  assert.equal(decideOom(at(270), at(270)), null, 'past the limit but at rest: nothing is killed');
  assert.equal(decideOom(at(270, 0), at(270.1, 0)), null, 'growth below the noise floor');
  assert.equal(decideOom(at(180, 150), at(200, 170)), 'files', 'file data past L - R');
  assert.equal(decideOom(at(150, 120), at(180, 150)), null, 'file data below L - R');
  assert.equal(decideOom(at(250, 200), at(262, 212)), 'files', 'past the limit, mostly files grew');
  assert.equal(decideOom(at(256 + 65), at(256 + 65)), 'memory', 'past L + R even at rest');
});

test('the victim: the largest process of at least 16 MiB; for files the biggest writer; past L + R the largest of any size', () => {
  const none = new Map<number, number>();
  const over = at(270);
  assert.equal(chooseVictim('memory', [proc(10, 3), proc(11, 200), proc(12, 40)], none, over)?.pid, 11);
  assert.equal(chooseVictim('memory', [proc(10, 3), proc(11, 5)], none, over), undefined, 'ls and rm run on while files fill the memory');
  assert.equal(chooseVictim('memory', [proc(10, 3), proc(11, 5)], none, at(256 + 70))?.pid, 11);
  assert.ok(MIN_VICTIM_RSS_BYTES > 6 * MiB);
  const before = new Map([[20, 500 * MiB], [21, 0]]);
  // 20 has written more in all, 21 more since the last scan: 21 is the writer.
  assert.equal(chooseVictim('files', [proc(20, 4, 510), proc(21, 4, 300), proc(22, 90, null)], before, at(200, 180))?.pid, 21);
  assert.equal(chooseVictim('files', [proc(20, 4, 500.5)], before, at(200, 180)), undefined, 'a shell message is no writer; below the limit nothing else is killed');
  assert.equal(chooseVictim('files', [proc(20, 4, 500), proc(22, 90, null)], before, over)?.pid, 22, 'no writer, past the limit: the largest');
  assert.equal(R, 64 * MiB);
});

const { dir, spawn: sleeper } = sleepers('oom-guard');

/** A synthetic /proc: meminfo plus `rows` as [pid, ppid, rss MiB, wchar bytes, cmdline]. */
function fakeProc(usedMiB: number, rows: Array<[number, number, number, number, string]>): string {
  const p = join(dir, 'proc');
  rmSync(p, { recursive: true, force: true });
  mkdirSync(p, { recursive: true });
  writeFileSync(join(p, 'meminfo'), `MemTotal: ${256 * 1024} kB\nAnonPages: ${usedMiB * 1024} kB\nShmem: 0 kB\n`);
  for (const [pid, ppid, rssMiB, wchar, cmdline] of rows) {
    mkdirSync(join(p, String(pid)));
    writeFileSync(join(p, String(pid), 'stat'), `${pid} (x) S ${ppid} ${pid} ${pid} 0 -1`);
    writeFileSync(join(p, String(pid), 'statm'), `1000 ${(rssMiB * MiB) / 4096} 0 0 0 0 0`);
    writeFileSync(join(p, String(pid), 'io'), `rchar: 0\nwchar: ${wchar}\n`);
    writeFileSync(join(p, String(pid), 'cmdline'), cmdline.replaceAll(' ', '\0'));
  }
  return p;
}

test('a tick past the limit SIGKILLs the largest process, never the agent, its ancestors or the bridge', async () => {
  const [hog, bridge, small] = [sleeper(), sleeper(), sleeper()];
  const rows = (used: number): Array<[number, number, number, number, string]> => [
    [1, 0, 50, 0, 'tini'],
    [process.pid, 1, 300, 0, 'node agent.mjs serve'],
    [bridge.pid as number, 1, 400, 0, 'socat STDIO UNIX-CONNECT:/run/ramify/agent.sock'],
    [hog.pid as number, process.pid, used - 30, 0, 'python3 hog.py'],
    [small.pid as number, process.pid, 3, 0, 'bash'],
  ];
  const kills: GuardKill[] = [];
  let procDir = fakeProc(200, rows(200));
  const guard = new OomGuard({ onKill: (k) => kills.push(k), log: () => undefined, procDir, spareCommandLinesWith: ['/run/ramify/agent.sock'] });
  // The guard reads the directory it was given: rewrite it in place between ticks.
  assert.equal(guard.tick(0), undefined, 'first reading: nothing to compare with');
  procDir = fakeProc(280, rows(280));
  const kill = guard.tick(20);
  assert.equal(kill?.pid, hog.pid);
  assert.equal(kill?.reason, 'memory');
  assert.equal(kills.length, 1);
  const [code, signal] = (await new Promise((resolve) => hog.once('exit', (...a) => resolve(a)))) as [number | null, string | null];
  assert.deepEqual([code, signal], [null, 'SIGKILL']);
  assert.equal(bridge.exitCode, null);
  assert.equal(bridge.signalCode, null);
  assert.equal(small.signalCode, null);
});
