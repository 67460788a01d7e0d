/**
 * The CPU time a gVisor sandbox has used, from its host cgroup's CPU accounting: cgroup v1
 * `cpuacct.usage` (ns; under `cpuacct/` or `cpu,cpuacct/`) or v2 `cpu.stat` `usage_usec`. Every process
 * of a sandbox (the Sentry running its workload, the gofer) is in its incarnation's cgroup, so this is the
 * whole sandbox's figure, runsc's own work included.
 */
import { readFile } from 'node:fs/promises';

/** CPU time used by cgroup `path` (e.g. `/ramify/sbx_1.x`) under `root`, µs; null when it has no readable accounting. */
export async function cgroupCpuUsageUs(path: string, root = '/sys/fs/cgroup'): Promise<number | null> {
  for (const dir of ['cpuacct', 'cpu,cpuacct']) {
    const text = await readFile(`${root}/${dir}${path}/cpuacct.usage`, 'utf8').catch(() => null);
    if (text !== null && /^\d+\s*$/.test(text)) return Math.floor(Number(text) / 1000);
  }
  const stat = await readFile(`${root}${path}/cpu.stat`, 'utf8').catch(() => null);
  const usage = stat?.match(/^usage_usec (\d+)$/m)?.[1];
  return usage === undefined ? null : Number(usage);
}
