/**
 * What a microVM uses: its QEMU process's user + system time from `/proc/<pid>/stat` (fields 14 and 15, in
 * clock ticks of 1/100 s: Linux's USER_HZ on every architecture QEMU runs us on), its start time there
 * (field 22: with the pid, it names the process), its resident memory now and at most (`VmRSS`, `VmHWM` of
 * `/proc/<pid>/status`), and the host bytes its disk files take (allocated blocks, not their virtual size).
 * All of the VM's vCPUs and devices are threads of that process.
 */
import { readFile, stat } from 'node:fs/promises';

/** Linux's USER_HZ: clock ticks per second in /proc/<pid>/stat. */
const TICKS_PER_SECOND = 100;

/** What {@link processUsage} reads of one process. */
export interface ProcessUsage {
  /** User + system time of the process and its threads, µs. */
  cpuUs: number;
  /** When it started, clock ticks after boot (names the process with its pid: pids are reused). */
  startTicks: number;
  /** Resident memory now and the most it had, bytes; null when unreadable. */
  rssBytes: number | null;
  hwmBytes: number | null;
}

/** CPU time, start time and memory of process `pid`; null when it cannot be read (gone). */
export async function processUsage(pid: number): Promise<ProcessUsage | null> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (text === null) return null;
  // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  const startTicks = Number(fields[19]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kib = (name: string): number | null => {
    const m = status.match(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm'));
    return m ? Number(m[1]) * 1024 : null;
  };
  return { cpuUs: ((utime + stime) * 1_000_000) / TICKS_PER_SECOND, startTicks, rssBytes: kib('VmRSS'), hwmBytes: kib('VmHWM') };
}

/** Bytes the files take on the host disk (allocated blocks; absent files count 0). */
export async function allocatedBytes(paths: readonly string[]): Promise<number> {
  let total = 0;
  for (const path of paths) total += await stat(path).then((s) => s.blocks * 512, () => 0);
  return total;
}
