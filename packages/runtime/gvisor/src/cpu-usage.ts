/**
 * What a gVisor sandbox uses, from its host cgroup: CPU time from the CPU accounting (cgroup v1
 * `cpuacct.usage`, ns, under `cpuacct/` or `cpu,cpuacct/`; v2 `cpu.stat` `usage_usec`) and memory from the
 * memory controller (v1 `memory.usage_in_bytes` and `memory.max_usage_in_bytes`; v2 `memory.current` and
 * `memory.peak`). Every process of a sandbox (the Sentry running its workload, the gofer) is in its
 * incarnation's cgroup, so these are the whole sandbox's figures, runsc's own work included; its memory
 * holds its file changes too (`--overlay2=root:memory`).
 */
import { open } from 'node:fs/promises';

/**
 * The text of a small kernel file (a cgroup or sysfs counter: under a page), or null when unreadable. One
 * open and one read (`readFile` is five thread-pool round trips: open, fstat, read, a read to find the end,
 * close); the close is not waited for. A pause reads these before its checkpoint, so each round trip on a
 * busy host is on its path.
 */
async function readCounterFile(file: string): Promise<string | null> {
  const handle = await open(file, 'r').catch(() => null);
  if (!handle) return null;
  try {
    const { bytesRead, buffer } = await handle.read({ buffer: Buffer.alloc(4096), position: 0 });
    return buffer.toString('utf8', 0, bytesRead);
  } catch {
    return null;
  } finally {
    void handle.close().catch(() => undefined);
  }
}

/** CPU time used by cgroup `path` (e.g. `/ramify/sbx_1.x`) under `root`, µs; null when it has no readable accounting. */
export async function cgroupCpuUsageUs(path: string, root = '/sys/fs/cgroup'): Promise<number | null> {
  for (const dir of ['cpuacct', 'cpu,cpuacct']) {
    const text = await readCounterFile(`${root}/${dir}${path}/cpuacct.usage`);
    if (text !== null && /^\d+\s*$/.test(text)) return Math.floor(Number(text) / 1000);
  }
  const stat = await readCounterFile(`${root}${path}/cpu.stat`);
  const usage = stat?.match(/^usage_usec (\d+)$/m)?.[1];
  return usage === undefined ? null : Number(usage);
}

/**
 * Memory of cgroup `path` under `root`, bytes: in use now and the most since it was made (null when
 * unreadable). Both files of a hierarchy are read at once.
 */
export async function cgroupMemoryUsage(path: string, root = '/sys/fs/cgroup'): Promise<{ usedBytes: number | null; peakBytes: number | null }> {
  const read = async (file: string): Promise<number | null> => {
    const text = await readCounterFile(file);
    return text !== null && /^\d+\s*$/.test(text) ? Number(text) : null;
  };
  const both = async (used: string, peak: string): Promise<{ usedBytes: number | null; peakBytes: number | null }> => {
    const [usedBytes, peakBytes] = await Promise.all([read(used), read(peak)]);
    return { usedBytes, peakBytes };
  };
  const v1 = await both(`${root}/memory${path}/memory.usage_in_bytes`, `${root}/memory${path}/memory.max_usage_in_bytes`);
  return v1.usedBytes !== null ? v1 : both(`${root}${path}/memory.current`, `${root}${path}/memory.peak`);
}
