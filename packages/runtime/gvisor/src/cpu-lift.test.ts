/** The CPU quota's files and writes, on a synthetic cgroup directory (its lifts: `cgroup-room.test.ts`). */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cgroupCpuFiles, writeCpuQuota } from './cpu-lift.js';

const dir = mkdtempSync(join(tmpdir(), 'ramify-cpu-lift-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('finds the CPU controller of cgroup v1 and v2 layouts', () => {
  const v1 = join(dir, 'v1');
  mkdirSync(join(v1, 'cpu'), { recursive: true });
  assert.deepEqual(cgroupCpuFiles('/ramify/sbx.1', v1), { quota: `${v1}/cpu/ramify/sbx.1/cpu.cfs_quota_us`, v2: false, procs: `${v1}/cpu/ramify/sbx.1/cgroup.procs` });
  const v2 = join(dir, 'v2');
  mkdirSync(v2, { recursive: true });
  assert.deepEqual(cgroupCpuFiles('/ramify/sbx.1', v2), { quota: `${v2}/ramify/sbx.1/cpu.max`, v2: true, procs: `${v2}/ramify/sbx.1/cgroup.procs` });
});

test('writes a quota, or none, in either layout; a missing cgroup is false, not a throw', async () => {
  for (const v2 of [false, true]) {
    const d = join(dir, `write-${v2}`);
    mkdirSync(d, { recursive: true });
    const files = { quota: join(d, v2 ? 'cpu.max' : 'cpu.cfs_quota_us'), v2, procs: join(d, 'cgroup.procs') };
    assert.equal(await writeCpuQuota(files, null, 100_000), true);
    assert.equal(readFileSync(files.quota, 'utf8'), v2 ? 'max 100000' : '-1');
    assert.equal(await writeCpuQuota(files, 200_000, 100_000), true);
    assert.equal(readFileSync(files.quota, 'utf8'), v2 ? '200000 100000' : '200000');
  }
  assert.equal(await writeCpuQuota({ quota: join(dir, 'gone', 'cpu.max'), v2: true, procs: '' }, null, 100_000), false);
});
