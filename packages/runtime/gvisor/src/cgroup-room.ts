/**
 * The room a gVisor sandbox's cgroup gets while runsc works on it. Two limits of the sandbox must be seen by
 * runsc as the spec gives them, yet would hamper runsc's own work if they stayed in force:
 * - memory: runsc passes `--total-memory` from the cgroup's limit (the sandbox's `MemTotal`, `memoryMB`);
 *   the OOM guard's headroom goes on top once runsc has read it (`memory-headroom.ts`);
 * - CPU: runsc sizes the sandbox's CPUs from the quota (`cpuCount`); its own loading of a restored image
 *   runs in the cgroup with several threads, and a 1-core quota throttled it (`cpu-lift.ts`).
 * Both are changed the moment runsc's sandbox process is in the cgroup (it has read them then), found by
 * one watch of `cgroup.procs` ({@link withStartRoom}). A checkpoint gets room too ({@link withCheckpointRoom}).
 * docs/design/RUNTIME-GVISOR.md, "Memory pressure", "Dead processes stay in the sentry" and "CPU quota while
 * runsc works".
 */
import { readFile, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { RamifyError } from '@ramify/contracts';
import { cgroupCpuFiles, writeCpuQuota, type CgroupCpuFiles } from './cpu-lift.js';
import { cgroupMemoryFiles, type CgroupMemoryFiles } from './memory-headroom.js';

/** One incarnation's cgroup: its memory and CPU controllers' files (cgroup v1 or v2). */
export interface SandboxCgroup {
  memory: CgroupMemoryFiles;
  cpu: CgroupCpuFiles;
}

/** The files of cgroup `path` (e.g. `/ramify/sbx_1.x`) under `root`. */
export function sandboxCgroup(path: string, root = '/sys/fs/cgroup'): SandboxCgroup {
  return { memory: cgroupMemoryFiles(path, root), cpu: cgroupCpuFiles(path, root) };
}

/** The sandbox's limits as its spec gives them, and the memory limit it runs with. */
export interface StartLimits {
  /** The memory limit once runsc has read `memoryMB` (`memoryMB` + headroom), bytes. */
  limitBytes: number;
  /** The CPU quota (`cpuCount` × `periodUs`), µs per period. */
  quotaUs: number;
  /** The CFS period, µs. */
  periodUs: number;
}

/** How often the cgroup is looked at while runsc starts the sandbox, ms. */
const POLL_MS = 5;

/**
 * Run `start` (a `runsc run` or `restore`). Once runsc's sandbox process is in the cgroup, the memory limit
 * is raised to `limitBytes` and the CPU quota lifted; when `start` resolved the memory limit is raised if the
 * watch had not, and the quota is `quotaUs` again whether `start` resolved or rejected. A failed start raises
 * no memory limit. A CPU quota that cannot be written is left as runsc wrote it (the sandbox just starts
 * slower).
 * @throws RamifyError `RUNTIME_ERROR` when the memory limit cannot be written (the sandbox would be killed
 *   by the host instead of its guard); whatever `start` rejects with.
 */
export async function withStartRoom<T>(cgroup: SandboxCgroup, limits: StartLimits, start: () => Promise<T>): Promise<T> {
  let settled = false;
  // One write, whoever asks first (the watch or the end of `start`); every asker sees its outcome.
  let raising: Promise<void> | null = null;
  const raise = (): Promise<void> =>
    (raising ??= writeFile(cgroup.memory.limit, String(limits.limitBytes)).catch((err: unknown) => {
      throw new RamifyError('RUNTIME_ERROR', `cannot give the sandbox's cgroup its memory headroom (${cgroup.memory.limit}): ${(err as Error).message}`);
    }));
  // Set in the same tick as the last look at `settled`: the end of `start` waits for a lift in flight.
  let lifting: Promise<boolean> | null = null;
  // Never rejects, and nobody waits for the watch itself: a cgroup read can block for seconds while other
  // sandboxes' cgroups are made or removed (a fork x8 under load), and the limit is written at the end either way.
  void (async (): Promise<void> => {
    while (!settled && raising === null) {
      if (await sandboxProcessIn(cgroup.memory.procs)) {
        if (settled) return;
        lifting = writeCpuQuota(cgroup.cpu, null, limits.periodUs);
        return void (await raise().catch(() => undefined));
      }
      await sleep(POLL_MS);
    }
  })();
  try {
    const result = await start();
    settled = true;
    await raise();
    return result;
  } finally {
    settled = true;
    if (lifting !== null && (await lifting)) await writeCpuQuota(cgroup.cpu, limits.quotaUs, limits.periodUs);
  }
}

/**
 * Run `checkpoint` (a `runsc checkpoint`) with the cgroup's memory limit doubled and its CPU quota lifted,
 * and put both back when the sandbox keeps running (a failed checkpoint); a successful one stops the
 * sandbox and its cgroup goes with it.
 * - Memory: the sentry serializes its kernel objects in its own memory, inside the sandbox's cgroup; gVisor
 *   20240729 never frees the procfs entries of a dead process whose `/proc/PID` something looked up
 *   (upstream gvisor#3933), so a sandbox that ran a few hundred such processes carries ~10^6 objects, and
 *   its checkpoint went past the OOM guard's headroom and was killed by the host (measured on runsc
 *   20240729: 600 `cat /proc/self/status` → 1.1·10^6 objects, 4.9 s of encoding, the third checkpoint
 *   OOM-killed).
 * - CPU: the encoding and the image's writing run in the cgroup too, under a `cpuCount` quota.
 * The sandbox's tasks are paused while the state is written, so its own processes cannot use the room
 * (only in the few ms before runsc stops them). Without a readable limit or quota, that one is left alone.
 * @throws whatever `checkpoint` rejects with (the limits are put back first).
 */
export async function withCheckpointRoom<T>(cgroup: SandboxCgroup, checkpoint: () => Promise<T>): Promise<T> {
  const [memoryBefore, cpuBefore] = await Promise.all([
    readFile(cgroup.memory.limit, 'utf8').then((t) => t.trim(), () => ''),
    readFile(cgroup.cpu.quota, 'utf8').then((t) => t.trim(), () => ''),
  ]);
  const limitBytes = /^\d+$/.test(memoryBefore) ? Number(memoryBefore) : null;
  // cgroup v1 says ~2^63 and v2 `max` when there is no limit: nothing to raise then.
  const raisingMemory = limitBytes !== null && limitBytes < 2 ** 50 ? writeFile(cgroup.memory.limit, String(limitBytes * 2)).then(() => true, () => false) : Promise.resolve(false);
  // v1 `-1` and v2 `max ...` are no quota: nothing to lift then.
  const quota = cgroup.cpu.v2 ? /^(\d+) (\d+)$/.exec(cpuBefore) : /^(\d+)$/.exec(cpuBefore);
  const liftingCpu = quota ? writeCpuQuota(cgroup.cpu, null, Number(quota[2] ?? 100_000)) : Promise.resolve(false);
  const [memoryRaised, cpuLifted] = await Promise.all([raisingMemory, liftingCpu]);
  try {
    return await checkpoint();
  } catch (err) {
    await Promise.all([
      memoryRaised ? writeFile(cgroup.memory.limit, memoryBefore).catch(() => undefined) : undefined,
      cpuLifted ? writeFile(cgroup.cpu.quota, cpuBefore).catch(() => undefined) : undefined,
    ]);
    throw err;
  }
}

/** Whether runsc's sandbox process (`runsc-sandbox ... --total-memory N ...`) is in the cgroup. */
export async function sandboxProcessIn(procsFile: string): Promise<boolean> {
  const pids = (await readFile(procsFile, 'utf8').catch(() => '')).split('\n').filter((p) => p !== '');
  for (const pid of pids) {
    const argv = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (argv.includes('--total-memory')) return true;
  }
  return false;
}

