/**
 * The CPU time a microVM has used: its QEMU process's user + system time from `/proc/<pid>/stat`
 * (fields 14 and 15, in clock ticks of 1/100 s: Linux's USER_HZ on every architecture QEMU runs us on).
 * All of the VM's vCPUs and devices are threads of that process.
 */
import { readFile } from 'node:fs/promises';

/** Linux's USER_HZ: clock ticks per second in /proc/<pid>/stat. */
const TICKS_PER_SECOND = 100;

/** CPU time used by process `pid` and its threads, µs; null when it cannot be read (gone). */
export async function processCpuUs(pid: number): Promise<number | null> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (text === null) return null;
  // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
  return ((utime + stime) * 1_000_000) / TICKS_PER_SECOND;
}
