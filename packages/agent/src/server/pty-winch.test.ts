import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ProcStat } from './proc-tree.js';
import { parseTpgid, winchGroups } from './pty-winch.js';

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
