/**
 * A gVisor sandbox's CPU quota (`cpuCount` cores, `oci-spec.ts`) also bounds runsc's own work on it: the
 * sandbox process (the sentry) loads a restored image inside the cgroup, with several threads, and a 1-core
 * quota throttled a restore for 230-330 ms of its ~500 (cgroup `cpu.stat` `throttled_time`, 2-core host).
 * Measured with raw `runsc restore`s of one image, alternating: 532 ms with the 1-core quota against 380 ms
 * with 2 cores (the whole host), medians of 6. So the quota is lifted while runsc starts the sandbox, once
 * the sandbox process is in the cgroup (runsc has read the quota for `--cpu-num-from-quota` then: the
 * sandbox sees `cpuCount` CPUs), and put back as soon as runsc returned: the sandbox's own processes run
 * unthrottled only for the few ms between the end of the restore and that write; and while runsc
 * checkpoints it (its tasks are stopped). Both in `cgroup-room.ts`. A daemon killed in between leaves the
 * quota lifted until the runtime's `sweepStale` (docs/design/RUNTIME-GVISOR.md, "CPU quota while runsc works").
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';

/** The files of a cgroup's CPU quota: cgroup v1 (`cpu/<path>/cpu.cfs_quota_us`) or v2 (`<path>/cpu.max`). */
export interface CgroupCpuFiles {
  quota: string;
  /** cgroup v2: `cpu.max` holds "quota period" ("max period" unlimited). */
  v2: boolean;
  procs: string;
}

/** Where the CPU controller of cgroup `path` (e.g. `/ramify/sbx_1.x`) is under `root`. */
export function cgroupCpuFiles(path: string, root = '/sys/fs/cgroup'): CgroupCpuFiles {
  if (existsSync(`${root}/cpu`)) return { quota: `${root}/cpu${path}/cpu.cfs_quota_us`, v2: false, procs: `${root}/cpu${path}/cgroup.procs` };
  return { quota: `${root}${path}/cpu.max`, v2: true, procs: `${root}${path}/cgroup.procs` };
}

/**
 * Write the cgroup's CPU quota: `quotaUs` µs per `periodUs`, or no quota for `null`. Never throws: resolves
 * whether the write was accepted (a cgroup without a CPU controller, or gone).
 */
export function writeCpuQuota(files: CgroupCpuFiles, quotaUs: number | null, periodUs: number): Promise<boolean> {
  const text = files.v2 ? `${quotaUs ?? 'max'} ${periodUs}` : String(quotaUs ?? -1);
  return writeFile(files.quota, text).then(() => true, () => false);
}
