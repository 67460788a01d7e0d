/**
 * The agent's OOM guard: the OOM killer of a sandbox whose kernel has none (gVisor: issues #1967,
 * #2533). Without it a process that allocates without bound, or writes files into the memory-backed
 * root overlay, /tmp or /dev/shm, grows until the host cgroup kills part of the sandbox (measured: the
 * host OOM-kills one of gVisor's ptrace stubs and the agent stops answering for good).
 *
 * The host gives the sandbox's cgroup room above `memoryMB` (see the gVisor runtime); the sandbox sees
 * `memoryMB` as `MemTotal` (the limit L). The guard reads `/proc/meminfo` every
 * {@link DEFAULT_FAST_POLL_MS} ms once use nears the limit ({@link fastPollFromBytes}), and below that as
 * rarely as the fastest growth could bring it there ({@link nextPollMs}: a read costs ~0.7 ms of the
 * sandbox's CPU under ptrace, a timer wakeup ~1 ms), and ({@link decideOom}, {@link chooseVictim}), with
 * R = {@link fileReserveBytes}(L):
 * - file data growing past L - R: SIGKILL to the process writing the most, so that once it is stopped
 *   there is still room for the commands that delete the files;
 * - use past L while processes' memory grows: SIGKILL to the process with the most resident memory, as
 *   Linux's OOM killer would, among those of at least {@link MIN_VICTIM_RSS_BYTES} (so that with files
 *   filling the memory, `ls` and `rm` still run);
 * - use past L + R: SIGKILL to the largest process whatever its size, growing or not.
 * Never the agent, its ancestors (tini, pid 1) or the host's bridges to it. One victim at a time: the
 * next decision waits until it is gone (at most {@link VICTIM_WAIT_MS} ms).
 */
import { readFileSync } from 'node:fs';
import type { BridgePids } from '../bridge-pids.js';
import { agentPids, listProcStats, parseProcStat, readCmdline, trySignal, type ProcStat } from '../proc-tree.js';
import { readMemory, readProcessMemory, type MemorySample, type ProcessMemory } from './meminfo.js';

/** Poll period from {@link fastPollFromBytes} on, ms (a hog under gVisor's ptrace platform allocates ~450 MB/s: ~9 MB per period). */
export const DEFAULT_FAST_POLL_MS = 20;
/** Longest poll period, ms (an idle sandbox far below its limit). */
export const DEFAULT_MAX_POLL_MS = 1000;
/** Growth the poll period below the fast level allows for, bytes per ms: ~1 GiB/s, twice the fastest measured. */
export const FASTEST_GROWTH_BYTES_PER_MS = 1024 * 1024;
/** Growth between two readings below this is noise (the agent's own heap), bytes. */
export const GROWTH_NOISE_BYTES = 256 * 1024;
/** Below L + R only processes with at least this much resident memory are killed, bytes (bash, rm, dd: 2-6 MiB). */
export const MIN_VICTIM_RSS_BYTES = 16 * 1024 * 1024;
/** A writer is one that wrote at least this much since the last scan, bytes (a shell's error message is not). */
export const MIN_WRITER_BYTES = 1024 * 1024;
/** How long the guard waits for its last victim to go before it may choose another, ms. */
export const VICTIM_WAIT_MS = 2000;
/** Process scans while polling fast happen at most this often, ms (each reads two files per process). */
const SCAN_EVERY_MS = 100;

/**
 * R, bytes: min(64 MiB, limit / 4). File data growing past the limit minus R stops its writer (what is
 * left serves the commands that clean up); use past the limit plus R stops the largest process.
 */
export function fileReserveBytes(limitBytes: number): number {
  return Math.min(64 * 1024 * 1024, Math.floor(limitBytes / 4));
}

/** Use from which the guard polls fast and keeps track of what processes write, bytes: min(3/4 L, L - 2R). */
export function fastPollFromBytes(limitBytes: number): number {
  return Math.min(Math.floor(limitBytes * 0.75), limitBytes - 2 * fileReserveBytes(limitBytes));
}

/**
 * How long until the next reading after `sample`, ms: {@link DEFAULT_FAST_POLL_MS} from the fast level on;
 * below it, the time the fastest growth ({@link FASTEST_GROWTH_BYTES_PER_MS}) takes to reach that level,
 * within [fast, {@link DEFAULT_MAX_POLL_MS}] (512 MiB sandbox, idle: ~360 ms).
 */
export function nextPollMs(sample: MemorySample, fastMs = DEFAULT_FAST_POLL_MS, maxMs = DEFAULT_MAX_POLL_MS): number {
  const distance = fastPollFromBytes(sample.limitBytes) - sample.usedBytes;
  return Math.round(Math.min(maxMs, Math.max(fastMs, distance / FASTEST_GROWTH_BYTES_PER_MS)));
}

/** Why the guard kills: memory of processes (`memory`) or file data in memory (`files`) grew too far. */
export type OomReason = 'memory' | 'files';

/**
 * Whether the change from `previous` to `now` calls for a kill, and why; null when it does not. Between
 * L and L + R nothing is killed while nothing grows (memory at rest stays within the host's margin).
 */
export function decideOom(previous: MemorySample | undefined, now: MemorySample): OomReason | null {
  const reserve = fileReserveBytes(now.limitBytes);
  const fileGrowth = previous ? now.fileBytes - previous.fileBytes : 0;
  const anonGrowth = previous ? now.usedBytes - now.fileBytes - (previous.usedBytes - previous.fileBytes) : 0;
  const filesGrow = fileGrowth > GROWTH_NOISE_BYTES;
  if (now.usedBytes > now.limitBytes) {
    if (filesGrow && fileGrowth >= anonGrowth) return 'files';
    if (anonGrowth > GROWTH_NOISE_BYTES || now.usedBytes > now.limitBytes + reserve) return 'memory';
    return null;
  }
  if (now.usedBytes > now.limitBytes - reserve && filesGrow) return 'files';
  return null;
}

/**
 * The victim among `candidates`: for `files`, the process that wrote the most since `writtenBefore` (a
 * process not in it counts all it wrote), at least {@link MIN_WRITER_BYTES}; otherwise, or when none wrote, and only once use is past the
 * limit, the one with the most resident memory of at least {@link MIN_VICTIM_RSS_BYTES} (of any size past
 * L + R). @returns undefined when there is none.
 */
export function chooseVictim(
  reason: OomReason,
  candidates: ProcessMemory[],
  writtenBefore: ReadonlyMap<number, number>,
  sample: MemorySample,
): ProcessMemory | undefined {
  if (reason === 'files') {
    let writer: ProcessMemory | undefined;
    let most = MIN_WRITER_BYTES - 1;
    for (const c of candidates) {
      if (c.writtenBytes === null) continue;
      const wrote = c.writtenBytes - (writtenBefore.get(c.pid) ?? 0);
      if (wrote > most) [writer, most] = [c, wrote];
    }
    if (writer) return writer;
  }
  if (sample.usedBytes <= sample.limitBytes) return undefined;
  const least = sample.usedBytes > sample.limitBytes + fileReserveBytes(sample.limitBytes) ? 0 : MIN_VICTIM_RSS_BYTES;
  return candidates.reduce<ProcessMemory | undefined>((best, c) => (c.rssBytes >= least && (!best || c.rssBytes > best.rssBytes) ? c : best), undefined);
}

/** One kill by the guard. */
export interface GuardKill {
  pid: number;
  /** Its command line (at most 256 characters). */
  cmd: string;
  rssBytes: number;
  reason: OomReason;
  /** The reading that decided it. */
  sample: MemorySample;
  /** The /proc snapshot taken before the kill (the victim's command tree is found in it). */
  stats: ProcStat[];
}

export interface OomGuardOptions {
  /** Called after each kill (the victim was sent SIGKILL). */
  onKill: (kill: GuardKill) => void;
  log: (line: string) => void;
  /** The agent's pid (default `process.pid`). */
  selfPid?: number;
  /** Processes whose command line contains one of these are never killed (the host's bridge to the agent socket). */
  spareCommandLinesWith?: readonly string[];
  /** Bridges known by pid: never killed, and their /proc/PID is never read. */
  bridges?: BridgePids;
  /** Default /proc. */
  procDir?: string;
  /** Poll period near the limit, ms (default {@link DEFAULT_FAST_POLL_MS}). */
  fastPollMs?: number;
  /** Longest poll period, ms (default {@link DEFAULT_MAX_POLL_MS}). */
  maxPollMs?: number;
}

export class OomGuard {
  readonly #options: OomGuardOptions;
  readonly #procDir: string;
  #timer: NodeJS.Timeout | undefined;
  #previous: MemorySample | undefined;
  /** `wchar` per pid at the last scan. */
  #written = new Map<number, number>();
  #lastScanAt = 0;
  #victim: { pid: number; at: number } | undefined;
  #running = false;

  constructor(options: OomGuardOptions) {
    this.#options = options;
    this.#procDir = options.procDir ?? '/proc';
  }

  /** Start polling (a no-op when started). The timer does not keep the process alive. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule(0);
  }

  stop(): void {
    this.#running = false;
    clearTimeout(this.#timer);
  }

  /**
   * Whether `bytes` more of file data fit under the limit minus {@link fileReserveBytes} (what the agent
   * checks before writing an upload, which the guard cannot stop by killing). True when unknown.
   */
  roomForFiles(bytes: number): boolean {
    const now = readMemory(this.#procDir) ?? this.#previous;
    if (!now) return true;
    return now.usedBytes + bytes <= now.limitBytes - fileReserveBytes(now.limitBytes);
  }

  /** One reading and, when it calls for one, one kill. Exposed for tests; the timer calls it. */
  tick(now = Date.now()): GuardKill | undefined {
    const sample = readMemory(this.#procDir);
    if (!sample) return undefined;
    const previous = this.#previous;
    const fast = sample.usedBytes >= fastPollFromBytes(sample.limitBytes);
    if (this.#victim) {
      if (now - this.#victim.at < VICTIM_WAIT_MS && isAlive(this.#procDir, this.#victim.pid)) return undefined;
      // Gone: what its memory and its last writes do to the accounting shows up now; start from here.
      this.#victim = undefined;
      this.#previous = sample;
      return undefined;
    }
    this.#previous = sample;
    const reason = decideOom(previous, sample);
    if (!reason) {
      if (fast && now - this.#lastScanAt >= SCAN_EVERY_MS) this.#scan(now);
      else if (!fast) this.#written.clear();
      return undefined;
    }
    const writtenBefore = this.#written;
    const { stats, candidates } = this.#scan(now);
    const victim = chooseVictim(reason, candidates, writtenBefore, sample);
    if (!victim) return undefined;
    const cmd = readCmdline(this.#procDir, victim.pid).replace(/\s+/g, ' ').trim().slice(0, 256);
    if (!trySignal(victim.pid, 'SIGKILL')) return undefined;
    this.#victim = { pid: victim.pid, at: now };
    const kill: GuardKill = { pid: victim.pid, cmd, rssBytes: victim.rssBytes, reason, sample, stats };
    this.#options.log(
      `out of memory: killed pid ${victim.pid} (${cmd || '?'}; ${mib(victim.rssBytes)} resident; ${reason === 'files' ? 'file data grew' : 'memory grew'}); ` +
        `${mib(sample.usedBytes)} in use (${mib(sample.fileBytes)} of it files) of ${mib(sample.limitBytes)}`,
    );
    this.#options.onKill(kill);
    return kill;
  }

  /** Every process that may be killed, with its memory and writes; remembers the writes for the next decision. */
  #scan(now: number): { stats: ProcStat[]; candidates: ProcessMemory[] } {
    this.#lastScanAt = now;
    const stats = listProcStats(this.#procDir, this.#options.bridges?.list());
    const spared = agentPids(stats, { selfPid: this.#options.selfPid, commandLinesWith: this.#options.spareCommandLinesWith, procDir: this.#procDir });
    const candidates: ProcessMemory[] = [];
    for (const s of stats) {
      if (spared.has(s.pid) || s.pid === 1 || s.state === 'Z' || s.state === 'X') continue;
      const m = readProcessMemory(s.pid, this.#procDir);
      if (m) candidates.push(m);
    }
    this.#written = new Map(candidates.filter((c) => c.writtenBytes !== null).map((c) => [c.pid, c.writtenBytes as number]));
    return { stats, candidates };
  }

  #schedule(delayMs: number): void {
    if (!this.#running) return;
    this.#timer = setTimeout(() => {
      try {
        this.tick();
      } catch (err) {
        this.#options.log(`oom guard: ${(err as Error).message}`);
      }
      const fastMs = this.#options.fastPollMs ?? DEFAULT_FAST_POLL_MS;
      this.#schedule(this.#previous ? nextPollMs(this.#previous, fastMs, this.#options.maxPollMs ?? DEFAULT_MAX_POLL_MS) : DEFAULT_MAX_POLL_MS);
    }, delayMs);
    this.#timer.unref();
  }
}

/** Whether `pid` still exists and is not a zombie. */
function isAlive(procDir: string, pid: number): boolean {
  try {
    const state = parseProcStat(readFileSync(`${procDir}/${pid}/stat`, 'utf8'))?.state;
    return state !== undefined && state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

function mib(bytes: number): string {
  return `${Math.round(bytes / (1024 * 1024))} MiB`;
}
