/**
 * The host-side CPU limit of a microVM: its QEMU process in the cgroup `<parent>/<sandboxId>` (the
 * gVisor runtime's layout: `/ramify/<id>`) with a CFS quota of `cpuCount` cores, the same quota the
 * gVisor runtime sets. The guest still sees the image's vCPUs (fixed when the template was booted);
 * the quota caps what they get together.
 *
 * cgroup v1 (`/sys/fs/cgroup/cpu/...`: `cpu.cfs_quota_us`, `cpu.cfs_period_us`) and the unified v2
 * hierarchy (`/sys/fs/cgroup/...`: `cpu.max`, with `+cpu` enabled on the way down) are both handled.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { RamifyError } from '@ramify/contracts';

/** CFS period, µs (the gVisor runtime's). */
export const CPU_PERIOD_US = 100_000;

/** Which cgroup hierarchy holds the cpu controller. */
export type CgroupLayout = { version: 1; cpuRoot: string } | { version: 2; root: string };

/** Find the cpu controller under `root` (default `/sys/fs/cgroup`); null when the host has none. */
export function detectCgroupLayout(root = '/sys/fs/cgroup'): CgroupLayout | null {
  if (existsSync(join(root, 'cgroup.controllers'))) return { version: 2, root };
  for (const name of ['cpu', 'cpu,cpuacct']) {
    if (existsSync(join(root, name, 'cpu.cfs_quota_us'))) return { version: 1, cpuRoot: join(root, name) };
  }
  return null;
}

/** What {@link CpuQuotas.apply} did, as read back from the cgroup files. */
export interface AppliedCpuQuota {
  /** Absolute directory of the sandbox's cgroup. */
  dir: string;
  quotaUs: number;
  periodUs: number;
}

export class CpuQuotas {
  /**
   * @param parent cgroup path under which every sandbox gets its own, e.g. `/ramify`; null disables quotas.
   * @param layout from {@link detectCgroupLayout}; null (no cpu controller) disables quotas.
   */
  constructor(readonly parent: string | null, readonly layout: CgroupLayout | null) {
    if (parent !== null && !/^(\/[A-Za-z0-9._-]+)+$/.test(parent)) throw new RamifyError('BAD_REQUEST', `cgroup parent '${parent}' must look like /ramify`);
  }

  /** True when quotas are applied (a parent is set and the host has a cpu controller). */
  get enabled(): boolean {
    return this.parent !== null && this.layout !== null;
  }

  /** Absolute directory of a sandbox's cgroup; null when quotas are disabled. */
  dirOf(sandboxId: string): string | null {
    if (!this.parent || !this.layout) return null;
    const base = this.layout.version === 1 ? this.layout.cpuRoot : this.layout.root;
    return join(base, this.parent, sandboxId);
  }

  /**
   * Create the sandbox's cgroup with a quota of `cpuCount` cores and move `pid` (all its threads)
   * into it. A no-op returning null when quotas are disabled. Rejects `RUNTIME_ERROR` naming the file
   * that could not be written.
   */
  async apply(sandboxId: string, pid: number, cpuCount: number): Promise<AppliedCpuQuota | null> {
    const dir = this.dirOf(sandboxId);
    if (!dir || !this.layout) return null;
    const quotaUs = Math.max(1000, Math.round(cpuCount * CPU_PERIOD_US));
    try {
      if (this.layout.version === 2) await this.enableCpuDownTo(dir);
      await mkdir(dir, { recursive: true });
      if (this.layout.version === 1) {
        await writeFile(join(dir, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
        await writeFile(join(dir, 'cpu.cfs_quota_us'), String(quotaUs));
      } else {
        await writeFile(join(dir, 'cpu.max'), `${quotaUs} ${CPU_PERIOD_US}`);
      }
      await writeFile(join(dir, 'cgroup.procs'), String(pid));
    } catch (err) {
      throw new RamifyError('RUNTIME_ERROR', `cannot put microVM '${sandboxId}' under a CPU quota in ${dir}: ${(err as Error).message}`);
    }
    return { dir, ...(await this.read(sandboxId))! };
  }

  /** The quota of a sandbox's cgroup as the kernel reports it; null when it has none. */
  async read(sandboxId: string): Promise<{ quotaUs: number; periodUs: number } | null> {
    const dir = this.dirOf(sandboxId);
    if (!dir || !this.layout) return null;
    try {
      if (this.layout.version === 1) {
        const quotaUs = Number((await readFile(join(dir, 'cpu.cfs_quota_us'), 'utf8')).trim());
        const periodUs = Number((await readFile(join(dir, 'cpu.cfs_period_us'), 'utf8')).trim());
        return { quotaUs, periodUs };
      }
      const [quota, period] = (await readFile(join(dir, 'cpu.max'), 'utf8')).trim().split(/\s+/);
      return { quotaUs: quota === 'max' ? -1 : Number(quota), periodUs: Number(period) };
    } catch {
      return null;
    }
  }

  /**
   * Remove the sandbox's cgroup (its processes must be gone; an exiting process may hold it for a
   * moment, so EBUSY is retried for up to 5 s). A no-op when it does not exist.
   */
  async remove(sandboxId: string): Promise<void> {
    const dir = this.dirOf(sandboxId);
    if (!dir) return;
    for (let attempt = 0; ; attempt++) {
      try {
        await rmdir(dir);
        return;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return;
        if (code !== 'EBUSY' || attempt >= 100) throw new RamifyError('RUNTIME_ERROR', `cannot remove the cgroup ${dir}: ${(err as Error).message}`);
        await sleep(50);
      }
    }
  }

  /** cgroup v2: enable the cpu controller in every ancestor's `cgroup.subtree_control` down to `dir`'s parent. */
  private async enableCpuDownTo(dir: string): Promise<void> {
    if (this.layout?.version !== 2) return;
    const parts = dir.slice(this.layout.root.length).split('/').filter(Boolean);
    let current = this.layout.root;
    for (const part of parts) {
      const control = join(current, 'cgroup.subtree_control');
      if (!(await readFile(control, 'utf8')).split(/\s+/).includes('cpu')) await writeFile(control, '+cpu');
      current = join(current, part);
      await mkdir(current, { recursive: true });
    }
  }
}
