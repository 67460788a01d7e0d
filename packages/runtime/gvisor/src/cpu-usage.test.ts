/** Reading a cgroup's CPU time (v1 cpuacct ns → µs, v2 cpu.stat) and memory (v1, v2), nothing readable → null. Files in a temp dir. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cgroupCpuUsageUs, cgroupMemoryUsage } from './cpu-usage.js';

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

test('cgroup v1 memory.usage_in_bytes and max, v2 memory.current and peak, and none', async () => {
  const root = await mkdtemp(join(tmpdir(), 'ramify-cgroup-'));
  try {
    await mkdir(join(root, 'memory/ramify/a'), { recursive: true });
    await writeFile(join(root, 'memory/ramify/a/memory.usage_in_bytes'), '1048576\n');
    await writeFile(join(root, 'memory/ramify/a/memory.max_usage_in_bytes'), '2097152\n');
    assert.deepEqual(await cgroupMemoryUsage('/ramify/a', root), { usedBytes: 1_048_576, peakBytes: 2_097_152 });
    await mkdir(join(root, 'ramify/b'), { recursive: true });
    await writeFile(join(root, 'ramify/b/memory.current'), '4096\n');
    assert.deepEqual(await cgroupMemoryUsage('/ramify/b', root), { usedBytes: 4096, peakBytes: null });
    assert.deepEqual(await cgroupMemoryUsage('/ramify/none', root), { usedBytes: null, peakBytes: null });
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
