/** The cgroup headroom's size and files (its writes: `cgroup-room.test.ts`). */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cgroupMemoryFiles, headroomMB } from './memory-headroom.js';

const dir = mkdtempSync(join(tmpdir(), 'ramify-headroom-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('headroom grows with the sandbox: 128 MiB plus an eighth', () => {
  assert.equal(headroomMB(256), 160);
  assert.equal(headroomMB(512), 192);
  assert.equal(headroomMB(4096), 640);
});

test('finds the memory controller of cgroup v1 and v2 layouts', () => {
  const v1 = join(dir, 'v1');
  mkdirSync(join(v1, 'memory'), { recursive: true });
  assert.deepEqual(cgroupMemoryFiles('/ramify/sbx.1', v1), { limit: `${v1}/memory/ramify/sbx.1/memory.limit_in_bytes`, procs: `${v1}/memory/ramify/sbx.1/cgroup.procs` });
  const v2 = join(dir, 'v2');
  mkdirSync(v2, { recursive: true });
  assert.deepEqual(cgroupMemoryFiles('/ramify/sbx.1', v2), { limit: `${v2}/ramify/sbx.1/memory.max`, procs: `${v2}/ramify/sbx.1/cgroup.procs` });
});
