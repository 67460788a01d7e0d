import assert from 'node:assert/strict';
import { test } from 'node:test';
import { collectTree, parseProcStat, type ProcStat } from './proc-tree.js';

test('parses /proc/PID/stat with spaces and parentheses in the command name', () => {
  const s = parseProcStat('4242 (my (weird) cmd) S 17 4242 4242 0 -1 4194560 100 0 0 0');
  assert.deepEqual(s, { pid: 4242, ppid: 17, pgrp: 4242, session: 4242, state: 'S' });
  assert.equal(parseProcStat('garbage'), undefined);
});

test('collects the process group plus every descendant, including ones that left the group', () => {
  const p = (pid: number, ppid: number, pgrp: number, state = 'S'): ProcStat => ({ pid, ppid, pgrp, session: pgrp, state });
  const stats = [p(1, 0, 1), p(100, 1, 100), p(101, 100, 100), p(102, 101, 102) /* setsid */, p(103, 102, 102), p(104, 1, 100) /* reparented */, p(200, 1, 200), p(105, 1, 100, 'Z')];
  assert.deepEqual([...collectTree(100, [100], stats)].sort((a, b) => a - b), [100, 101, 102, 103, 104]);
});
