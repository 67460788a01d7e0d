/**
 * The host cgroup memory limit of a gVisor sandbox. gVisor has no OOM killer of its own (gVisor issues
 * #1967, #2533): a sandbox at its cgroup's limit is OOM-killed by the host kernel, in part (measured on
 * runsc 20240729, ptrace platform: the host killed one of the sentry's stub processes and the agent never
 * answered again). So the agent's OOM guard kills user processes once they use more than `memoryMB`
 * (`agent/src/server/memory/oom-guard.ts`), and the cgroup gives it room to act in: a hog keeps growing
 * until the next reading (~450 MB/s measured), file data may pass the limit a little, and the sentry and
 * gofer hold ~20-25 MiB of their own. The cgroup's limit is `memoryMB` + {@link headroomMB}.
 *
 * The sandbox must still see `memoryMB` as its `MemTotal`: runsc passes the sandbox process
 * `--total-memory` from the limit it finds in the cgroup when it starts it (at `run` and at every
 * `restore`; there is no runsc flag for it in 20240729). So the OCI spec keeps the limit at `memoryMB`,
 * and {@link withHeadroom} raises it as soon as that process is in the cgroup: after runsc read it,
 * before a restore loads the image's memory (which may itself be above `memoryMB`).
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { RamifyError } from '@ramify/contracts';

/**
 * Room above `memoryMB` in the host cgroup, MiB: 128 + memoryMB / 8 (256 MiB sandbox: +160; 512: +192;
 * 4096: +640). Measured peaks above `memoryMB` with the guard on a 2-core host under load (256 MiB
 * sandbox): one hog +30, two hogs at once +57, `dd` into the root overlay, /tmp or /dev/shm at most +50.
 */
export function headroomMB(memoryMB: number): number {
  return 128 + Math.ceil(memoryMB / 8);
}

/** The files of a cgroup's memory controller: cgroup v1 (`memory/<path>`) or v2 (`<path>`). */
export interface CgroupMemoryFiles {
  /** `memory.limit_in_bytes` (v1) or `memory.max` (v2). */
  limit: string;
  /** `cgroup.procs`. */
  procs: string;
}

/** Where the memory controller of cgroup `path` (e.g. `/ramify/sbx_1.x`) is under `root`. */
export function cgroupMemoryFiles(path: string, root = '/sys/fs/cgroup'): CgroupMemoryFiles {
  if (existsSync(`${root}/memory`)) return { limit: `${root}/memory${path}/memory.limit_in_bytes`, procs: `${root}/memory${path}/cgroup.procs` };
  return { limit: `${root}${path}/memory.max`, procs: `${root}${path}/cgroup.procs` };
}

/** How often the cgroup is looked at while runsc starts the sandbox, ms. */
const POLL_MS = 5;

/**
 * Run `start` (a `runsc run` or `restore`) and raise the memory limit of cgroup `files` to `limitBytes`
 * once runsc's sandbox process is in it (it carries `--total-memory`), or when `start` resolved, whichever
 * comes first.
 * @throws RamifyError `RUNTIME_ERROR` when the limit cannot be written (the sandbox would be killed by the
 *   host instead of its guard); whatever `start` rejects with.
 */
export async function withHeadroom<T>(files: CgroupMemoryFiles, limitBytes: number, start: () => Promise<T>): Promise<T> {
  let settled = false;
  // One write, whoever asks first (the watch or the end of `start`); every asker sees its outcome.
  let raising: Promise<void> | null = null;
  const raise = (): Promise<void> =>
    (raising ??= writeFile(files.limit, String(limitBytes)).catch((err: unknown) => {
      throw new RamifyError('RUNTIME_ERROR', `cannot give the sandbox's cgroup its memory headroom (${files.limit}): ${(err as Error).message}`);
    }));
  // Never rejects (nobody awaits it while runsc runs): a failed raise is seen through `raise()` below.
  void (async (): Promise<void> => {
    while (!settled && raising === null) {
      if (await sandboxProcessIn(files.procs)) return void (await raise().catch(() => undefined));
      await sleep(POLL_MS);
    }
  })();
  let result: T;
  try {
    result = await start();
  } finally {
    settled = true;
  }
  // Not the watch's read in flight: a cgroup read can block for seconds while other sandboxes' cgroups
  // are made or removed (a fork x8 under load), and the limit is written now either way.
  await raise();
  return result;
}

/**
 * Run `checkpoint` (a `runsc checkpoint`) with the cgroup's memory limit doubled, then put the limit
 * back when the sandbox keeps running (a failed checkpoint). The sentry serializes its kernel objects in
 * its own memory, inside the sandbox's cgroup; gVisor 20240729 never frees the procfs entries of a dead
 * process whose `/proc/PID` something looked up (upstream gvisor#3933), so a sandbox that ran a few
 * hundred such processes carries ~10^6 objects, and its checkpoint went past the OOM guard's headroom and
 * was killed by the host (measured on runsc 20240729: 600 `cat /proc/self/status` → 1.1·10^6 objects,
 * 4.9 s of encoding, the third checkpoint OOM-killed). Its tasks are paused while the state is written,
 * so the sandbox's own processes cannot use the extra room. Without a readable limit it just runs.
 * @throws whatever `checkpoint` rejects with (the limit is put back first).
 */
export async function withCheckpointRoom<T>(files: CgroupMemoryFiles, checkpoint: () => Promise<T>): Promise<T> {
  const before = (await readFile(files.limit, 'utf8').catch(() => '')).trim();
  const limitBytes = /^\d+$/.test(before) ? Number(before) : null;
  // cgroup v1 says ~2^63 and v2 `max` when there is no limit: nothing to raise then.
  const raised = limitBytes !== null && limitBytes < 2 ** 50 && (await writeFile(files.limit, String(limitBytes * 2)).then(() => true, () => false));
  try {
    return await checkpoint();
  } catch (err) {
    if (raised) await writeFile(files.limit, before).catch(() => undefined);
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
