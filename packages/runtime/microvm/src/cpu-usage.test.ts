/**
 * What a microVM's counters are read from, on this process (a QEMU process reads the same way): CPU time,
 * start time and memory from the real `/proc/<pid>`, a gone pid, and the allocated bytes of files (a
 * sparse file takes only what was written).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { allocatedBytes, processUsage } from './cpu-usage.js';

test('CPU, start time and memory of a live process; null for a gone one', async () => {
  const before = await processUsage(process.pid);
  const own = process.cpuUsage();
  // 0.3 s of CPU as the process itself counts it (its wall time depends on the machine's load).
  for (let spent = 0; spent < 300_000; spent = process.cpuUsage(own).user + process.cpuUsage(own).system) Math.sqrt(Math.random());
  const after = await processUsage(process.pid);
  const ownUs = process.cpuUsage(own).user + process.cpuUsage(own).system;
  assert.ok(before && after);
  // /proc counts in ticks of 10 ms; allow two each side, and the reads' own work.
  assert.ok(Math.abs(after.cpuUs - before.cpuUs - ownUs) <= 50_000, `/proc says ${after.cpuUs - before.cpuUs} µs, the process ${ownUs} µs`);
  assert.equal(after.startTicks, before.startTicks, 'the same process');
  assert.ok((after.rssBytes ?? 0) > 1 << 20 && (after.hwmBytes ?? 0) >= (after.rssBytes ?? 0));
  assert.equal(await processUsage(2 ** 22 + 1), null);
});

test('allocated bytes: what was written of a sparse file, absent files 0', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ramify-alloc-'));
  try {
    const sparse = join(dir, 'disk.qcow2');
    const handle = await open(sparse, 'w');
    await handle.truncate(1 << 30);
    await handle.write(Buffer.alloc(64 * 1024, 1), 0, 64 * 1024, 0);
    await handle.close();
    await writeFile(join(dir, 'small'), 'x');
    const bytes = await allocatedBytes([sparse, join(dir, 'small'), join(dir, 'absent')]);
    assert.ok(bytes >= 64 * 1024 && bytes < 1 << 20, `${bytes} bytes for 64 KiB written into 1 GiB`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
