/**
 * What a gVisor sandbox uses, from its host cgroup: CPU time from the CPU accounting (cgroup v1
 * `cpuacct.usage`, ns, under `cpuacct/` or `cpu,cpuacct/`; v2 `cpu.stat` `usage_usec`) and memory from the
 * memory controller (v1 `memory.usage_in_bytes` and `memory.max_usage_in_bytes`; v2 `memory.current` and
 * `memory.peak`). Every process of a sandbox (the Sentry running its workload, the gofer) is in its
 * incarnation's cgroup, so these are the whole sandbox's figures, runsc's own work included; its memory
 * holds its file changes too (`--overlay2=root:memory`).
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

/** Memory of cgroup `path` under `root`, bytes: in use now and the most since it was made (null when unreadable). */
export async function cgroupMemoryUsage(path: string, root = '/sys/fs/cgroup'): Promise<{ usedBytes: number | null; peakBytes: number | null }> {
  const read = async (file: string): Promise<number | null> => {
    const text = await readFile(file, 'utf8').catch(() => null);
    return text !== null && /^\d+\s*$/.test(text) ? Number(text) : null;
  };
  const v1 = `${root}/memory${path}`;
  const used = await read(`${v1}/memory.usage_in_bytes`);
  if (used !== null) return { usedBytes: used, peakBytes: await read(`${v1}/memory.max_usage_in_bytes`) };
  return { usedBytes: await read(`${root}${path}/memory.current`), peakBytes: await read(`${root}${path}/memory.peak`) };
}
