/**
 * Reading the sandbox's memory from `/proc/meminfo` and processes' memory and writes from `/proc/PID`.
 *
 * What gVisor's fields mean (measured on runsc 20240729; they differ from Linux's):
 * - `MemTotal` is the sandbox's memory limit (`--total-memory`, from the cgroup limit runsc found at
 *   boot or restore): the sandbox's `memoryMB`.
 * - `AnonPages` is anonymous memory plus file data kept in memory (tmpfs, `/dev/shm` and the root
 *   overlay's upper layer with `--overlay2=root:memory`); `Shmem` is that file data alone. The host
 *   cgroup is charged `AnonPages` plus the sentry's and gofer's own ~20-25 MiB.
 * - `Mapped`/`Cached` (~90 MiB in the base template) are pages of the template's files read from the
 *   host; they are not charged to the sandbox, and `MemFree`/`MemAvailable` (which subtract them and stop
 *   at 0) understate what is left.
 */
import { readFileSync } from 'node:fs';

/** One reading of the sandbox's memory, bytes. */
export interface MemorySample {
  /** `MemTotal`: the sandbox's memory limit. */
  limitBytes: number;
  /** `AnonPages`: memory in use that only freeing (killing a process, deleting files) gives back. */
  usedBytes: number;
  /** `Shmem`: of {@link usedBytes}, file data kept in memory. */
  fileBytes: number;
}

/** What one process holds and wrote, from `/proc/PID/statm` and `/proc/PID/io`. */
export interface ProcessMemory {
  pid: number;
  /** Resident memory (`statm`'s second field times the page size), bytes. */
  rssBytes: number;
  /** Bytes it has written with write(2) and friends since it started (`io`'s `wchar`); null when unreadable. */
  writtenBytes: number | null;
}

const PAGE_BYTES = 4096;

/** Parse the text of `/proc/meminfo`. @returns undefined when `MemTotal` or `AnonPages` is missing. */
export function parseMeminfo(text: string): MemorySample | undefined {
  const kb = (name: string): number | undefined => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : undefined;
  };
  const limitBytes = kb('MemTotal');
  const usedBytes = kb('AnonPages');
  if (limitBytes === undefined || usedBytes === undefined) return undefined;
  return { limitBytes, usedBytes, fileBytes: kb('Shmem') ?? 0 };
}

/** Read `/proc/meminfo` under `procDir`. @returns undefined when it cannot be read or parsed. */
export function readMemory(procDir = '/proc'): MemorySample | undefined {
  try {
    return parseMeminfo(readFileSync(`${procDir}/meminfo`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Read one process's memory and writes. @returns undefined when it exited meanwhile. */
export function readProcessMemory(pid: number, procDir = '/proc'): ProcessMemory | undefined {
  let rssBytes: number;
  try {
    rssBytes = Number(readFileSync(`${procDir}/${pid}/statm`, 'utf8').split(' ')[1]) * PAGE_BYTES;
  } catch {
    return undefined;
  }
  let writtenBytes: number | null = null;
  try {
    const m = /^wchar:\s+(\d+)/m.exec(readFileSync(`${procDir}/${pid}/io`, 'utf8'));
    if (m) writtenBytes = Number(m[1]);
  } catch {
    // Not readable (another user's process without CAP_SYS_PTRACE): only its memory counts.
  }
  return { pid, rssBytes: Number.isFinite(rssBytes) ? rssBytes : 0, writtenBytes };
}
