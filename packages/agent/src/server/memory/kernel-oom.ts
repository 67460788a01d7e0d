/**
 * OOM kills by a real kernel (microVMs: the guest kernel has an OOM killer of its own). The agent does
 * not choose victims there; it keeps itself out of the kernel's choice (`oom_score_adj` -1000, see
 * {@link protectFromOomKiller}; its commands start at 0) and reports each kill: the kernel counts kills
 * in `/proc/vmstat` (`oom_kill`) and names each victim in its log (`/dev/kmsg`: "Out of memory: Killed
 * process 123 (python3) total-vm:..., anon-rss:...kB, file-rss:...kB, shmem-rss:...kB ...").
 *
 * The counter is polled every {@link DEFAULT_KERNEL_POLL_MS} ms; only when it moved is the log read
 * (non-blocking, records since the last read). A command that dies of a SIGKILL the agent did not send
 * asks at once ({@link KernelOomWatcher.check}): the kernel logs the kill before the victim is gone, so
 * its exit can still say `oom`.
 */
import { closeSync, constants, openSync, readFileSync, readSync, writeFileSync } from 'node:fs';

/** How often the kernel's kill counter is read, ms (a command killed by SIGKILL asks at once; this catches its children and orphans). */
export const DEFAULT_KERNEL_POLL_MS = 1000;

/** How often, and how long apart (ms), the log is read again for a counted kill it does not name yet (at most 20 ms in all). */
const LOG_RETRIES = 10;
const LOG_RETRY_PAUSE_MS = 2;
/** What `Atomics.wait` sleeps on for those pauses (a short synchronous wait: the caller settles an exit next). */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/** One victim of the kernel's OOM killer. */
export interface KernelKill {
  pid: number;
  /** The process name the kernel gives (its `comm`, at most 15 characters). */
  name: string;
  /** anon-rss + file-rss + shmem-rss of the kernel's report, bytes; null when the line lacks them. */
  rssBytes: number | null;
}

/**
 * Parse one `/dev/kmsg` record (`prio,seq,usec,flags;message`) or dmesg line naming an OOM victim.
 * @returns undefined for any other line.
 */
export function parseKernelKill(line: string): KernelKill | undefined {
  const m = /Killed process (\d+) \((.*?)\)([^\n]*)/.exec(line);
  if (!m) return undefined;
  const kb = (field: string): number | undefined => {
    const f = new RegExp(`${field}:(\\d+)kB`).exec(m[3] ?? '');
    return f ? Number(f[1]) * 1024 : undefined;
  };
  const parts = [kb('anon-rss'), kb('file-rss'), kb('shmem-rss')];
  const rssBytes = parts.every((p) => p === undefined) ? null : parts.reduce<number>((sum, p) => sum + (p ?? 0), 0);
  return { pid: Number(m[1]), name: m[2] ?? '', rssBytes };
}

/** The kernel's OOM kill count (`oom_kill` in `/proc/vmstat`); null when it has none (gVisor, old kernels). */
export function readOomKillCount(procDir = '/proc'): number | null {
  try {
    const m = /^oom_kill (\d+)$/m.exec(readFileSync(`${procDir}/vmstat`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/**
 * Keep this process out of the kernel OOM killer's choice (`oom_score_adj` -1000; needs root). Its
 * children inherit the value: commands reset theirs (`SpawnSpec.resetOomScore`).
 * @returns null when done, else why not.
 */
export function protectFromOomKiller(procDir = '/proc'): string | null {
  try {
    writeFileSync(`${procDir}/self/oom_score_adj`, '-1000');
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

export interface KernelOomWatcherOptions {
  /** Called once per victim. `unattributed` when the kernel's log could not be read: only the count moved. */
  onKill: (kill: KernelKill | 'unattributed') => void;
  log: (line: string) => void;
  procDir?: string;
  kmsgPath?: string;
  pollMs?: number;
}

export class KernelOomWatcher {
  readonly #options: KernelOomWatcherOptions;
  readonly #procDir: string;
  #count: number | null = null;
  /** Kills counted whose log record was not read yet (the kernel counts a kill just before it logs it). */
  #unnamed = 0;
  #kmsg: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  readonly #buffer = Buffer.alloc(8192);

  constructor(options: KernelOomWatcherOptions) {
    this.#options = options;
    this.#procDir = options.procDir ?? '/proc';
  }

  /**
   * Start watching: remember the current kill count and skip the log's older records. A kernel without
   * the counter (gVisor) is not watched. @returns whether it watches.
   */
  start(): boolean {
    this.#count = readOomKillCount(this.#procDir);
    if (this.#count === null) return false;
    try {
      this.#kmsg = openSync(this.#options.kmsgPath ?? '/dev/kmsg', constants.O_RDONLY | constants.O_NONBLOCK);
      this.#readLog(); // What the log held before the agent started.
    } catch (err) {
      this.#options.log(`cannot read the kernel log (${(err as Error).message}): OOM kills will be counted, not named`);
    }
    const tick = (): void => {
      this.check();
      this.#timer = setTimeout(tick, this.#options.pollMs ?? DEFAULT_KERNEL_POLL_MS);
      this.#timer.unref();
    };
    tick();
    return true;
  }

  stop(): void {
    clearTimeout(this.#timer);
    if (this.#kmsg !== undefined) closeSync(this.#kmsg);
    this.#kmsg = undefined;
  }

  /** Look for kills since the last look; each is reported to `onKill` before this returns. */
  check(): void {
    if (this.#count === null) return;
    const count = readOomKillCount(this.#procDir);
    if (count === null) return;
    this.#unnamed += Math.max(0, count - this.#count);
    this.#count = count;
    if (this.#unnamed === 0) return;
    if (this.#kmsg === undefined) {
      for (; this.#unnamed > 0; this.#unnamed--) this.#options.onKill('unattributed');
      return;
    }
    // The kernel counts a kill just before it logs it: a record not there yet comes within moments.
    for (let attempt = 0; this.#unnamed > 0 && attempt < LOG_RETRIES; attempt++) {
      if (attempt > 0) Atomics.wait(PAUSE, 0, 0, LOG_RETRY_PAUSE_MS);
      for (const kill of this.#readLog()) {
        this.#unnamed = Math.max(0, this.#unnamed - 1);
        this.#options.onKill(kill);
      }
    }
  }

  /** Every OOM victim in the log records not read yet. */
  #readLog(): KernelKill[] {
    const kills: KernelKill[] = [];
    if (this.#kmsg === undefined) return kills;
    for (;;) {
      let n: number;
      try {
        n = readSync(this.#kmsg, this.#buffer, 0, this.#buffer.length, null);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EPIPE') continue; // Records were overwritten before we read them: go on from the oldest kept.
        break; // EAGAIN: nothing more now.
      }
      if (n <= 0) break;
      const kill = parseKernelKill(this.#buffer.toString('utf8', 0, n));
      if (kill) kills.push(kill);
    }
    return kills;
  }
}
