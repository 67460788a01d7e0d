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
 * and `withStartRoom` (`cgroup-room.ts`) raises it as soon as that process is in the cgroup: after runsc
 * read it, before a restore loads the image's memory (which may itself be above `memoryMB`). A checkpoint
 * gets twice the limit (`withCheckpointRoom`, same file).
 */
import { existsSync } from 'node:fs';

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

