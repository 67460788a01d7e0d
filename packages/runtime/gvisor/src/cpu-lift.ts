/**
 * A gVisor sandbox's CPU quota (`cpuCount` cores, `oci-spec.ts`) also bounds runsc's own work of starting
 * it: the sandbox process (the sentry) loads a restored image inside the cgroup, with several threads, and
 * a 1-core quota throttled a restore for 230-330 ms of its ~500 (cgroup `cpu.stat` `throttled_time`, 2-core
 * host). Measured with raw `runsc restore`s of one image, alternating: 532 ms with the 1-core quota against
 * 380 ms with 2 cores (the whole host), medians of 6. So {@link withCpuLifted} lifts the quota while runsc
 * starts the sandbox, once the sandbox process is in the cgroup (runsc has read the quota for
 * `--cpu-num-from-quota` then: the sandbox sees `cpuCount` CPUs), and puts it back as soon as runsc
 * returned: the sandbox's own processes run unthrottled only for the few ms between the end of the restore
 * and that write. A daemon killed in between leaves the quota lifted until the sandbox's next incarnation
 * (docs/design/RUNTIME-GVISOR.md, "CPU quota while starting").
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { sandboxProcessIn } from './memory-headroom.js';

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

/** How often the cgroup is looked at while runsc starts the sandbox, ms. */
const POLL_MS = 5;

/**
 * Run `start` (a `runsc run` or `restore`) with cgroup `files`' CPU quota lifted from the moment runsc's
 * sandbox process is in it until `start` settles; then the quota is `quotaUs` per `periodUs` again.
 * Never fails because of the quota (a cgroup without a CPU controller, or a write refused, just runs):
 * the quota runsc wrote stays in force then.
 * @throws whatever `start` rejects with.
 */
export async function withCpuLifted<T>(files: CgroupCpuFiles, quotaUs: number, periodUs: number, start: () => Promise<T>): Promise<T> {
  let settled = false;
  // Set in the same tick as the last look at `settled`: `start`'s end waits for a lift in flight.
  let lifting: Promise<boolean> | null = null;
  // Never rejects, and nobody waits for the watch itself (a cgroup read can block while other sandboxes'
  // cgroups change).
  void (async (): Promise<void> => {
    while (!settled) {
      if (await sandboxProcessIn(files.procs)) {
        if (!settled) lifting = writeFile(files.quota, files.v2 ? `max ${periodUs}` : '-1').then(() => true, () => false);
        return;
      }
      await sleep(POLL_MS);
    }
  })();
  try {
    return await start();
  } finally {
    settled = true;
    if (lifting !== null && (await lifting)) await writeFile(files.quota, files.v2 ? `${quotaUs} ${periodUs}` : String(quotaUs)).catch(() => undefined);
  }
}
