/** Reading a cgroup's CPU time: v1 cpuacct (ns → µs), v2 cpu.stat, nothing readable → null. Files in a temp dir. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cgroupCpuUsageUs } from './cpu-usage.js';

test('cgroup v1 cpuacct.usage, v2 cpu.stat, and none', async () => {
  const root = await mkdtemp(join(tmpdir(), 'ramify-cgroup-'));
  try {
    await mkdir(join(root, 'cpuacct/ramify/a'), { recursive: true });
    await writeFile(join(root, 'cpuacct/ramify/a/cpuacct.usage'), '1234567890\n');
    assert.equal(await cgroupCpuUsageUs('/ramify/a', root), 1_234_567);
    await mkdir(join(root, 'ramify/b'), { recursive: true });
    await writeFile(join(root, 'ramify/b/cpu.stat'), 'usage_usec 4242\nuser_usec 4000\nsystem_usec 242\n');
    assert.equal(await cgroupCpuUsageUs('/ramify/b', root), 4242);
    assert.equal(await cgroupCpuUsageUs('/ramify/none', root), null);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
