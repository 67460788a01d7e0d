import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import type { ProcStat } from './proc-tree.js';
import { parseTpgid, signalResize, winchGroups } from './pty-winch.js';

test('reads the foreground group (tpgid) from /proc/PID/stat, command names with spaces included', () => {
  assert.equal(parseTpgid('30801 (ba sh) S 30800 30801 30801 34816 30803 4194560 100 0'), 30803);
  assert.equal(parseTpgid('8 (bash) S 7 8 8 0 0 4194560 100 0'), 0); // gVisor: none shown
});

test('signals nothing when the kernel shows a foreground group, else every live group of the session', () => {
  const p = (pid: number, pgrp: number, session: number, state = 'S'): ProcStat => ({ pid, ppid: 1, pgrp, session, state });
  const stats = [p(8, 8, 8), p(9, 9, 8), p(10, 9, 8), p(11, 11, 8, 'Z'), p(12, 12, 12), p(13, 13, 12)];
  assert.deepEqual(winchGroups(8, 9, stats), []);
  assert.deepEqual(winchGroups(8, 0, stats).sort((a, b) => a - b), [8, 9]);
});

test('a session whose /proc shows no foreground group gets SIGWINCH, found from its leader down', async () => {
  // A real session leader with no terminal (tpgid -1, as gVisor shows for a real one) and a job in
  // another group; `wait` returns at the trapped signal, then the job is ended.
  const script = 'set -m; trap "echo winch" WINCH; sleep 30 & wait $!; kill $!; echo done';
  const child = spawn('setsid', ['bash', '-c', script], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const pid = child.pid as number;
  while (!readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim()) await sleep(20);
  signalResize(pid);
  await once(child, 'exit');
  assert.equal(out, 'winch\ndone\n');
});
