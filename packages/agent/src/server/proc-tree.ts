/**
 * Process-tree discovery and killing through /proc. A command's tree is its process group plus every
 * descendant reachable by parent links — the latter catches children that left the group with
 * `setsid`. The tree is frozen with SIGSTOP while it is collected (so nothing forks or gets reparented
 * between collection and the kill), then everything is SIGKILLed.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** One row of /proc/PID/stat that matters here. */
export interface ProcStat {
  pid: number;
  ppid: number;
  pgrp: number;
  session: number;
  /** Single-letter state: R, S, D, Z, T, ... */
  state: string;
}

/** Parse the content of /proc/PID/stat (the command name may contain spaces and parentheses). */
export function parseProcStat(text: string): ProcStat | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const pid = Number.parseInt(text.slice(0, text.indexOf(' ')), 10);
  const rest = text.slice(close + 2).split(' ');
  const [state, ppid, pgrp, session] = [rest[0], Number(rest[1]), Number(rest[2]), Number(rest[3])];
  if (!Number.isInteger(pid) || !Number.isInteger(ppid)) return undefined;
  return { pid, ppid, pgrp, session, state };
}

/**
 * Snapshot of every process visible in /proc (processes that vanish while reading are skipped).
 * @param skip pids left out without reading their /proc/PID (the host's bridges: see bridge-pids.ts).
 */
export function listProcStats(procDir = '/proc', skip?: ReadonlySet<number>): ProcStat[] {
  const out: ProcStat[] = [];
  for (const name of readdirSync(procDir)) {
    if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) continue;
    if (skip?.has(Number(name))) continue;
    try {
      const stat = parseProcStat(readFileSync(`${procDir}/${name}/stat`, 'utf8'));
      if (stat) out.push(stat);
    } catch {
      // Exited between readdir and read.
    }
  }
  return out;
}

/** Pids of `rootPid`'s process group and of all descendants of `roots`, from one /proc snapshot. */
export function collectTree(rootPid: number, roots: Iterable<number>, stats: ProcStat[]): Set<number> {
  const children = new Map<number, number[]>();
  for (const s of stats) {
    const list = children.get(s.ppid);
    if (list) list.push(s.pid);
    else children.set(s.ppid, [s.pid]);
  }
  const found = new Set<number>();
  for (const s of stats) if (s.pgrp === rootPid && s.state !== 'Z') found.add(s.pid);
  for (const r of roots) found.add(r);
  const queue = [...found];
  while (queue.length > 0) {
    const pid = queue.pop() as number;
    for (const child of children.get(pid) ?? []) {
      if (!found.has(child)) {
        found.add(child);
        queue.push(child);
      }
    }
  }
  return found;
}

/**
 * Whether `selfPid` is a sandbox's init or its child (tini's): where stopping or killing "every other
 * process" is meant. An agent anywhere else (a test on a host) must not.
 */
export function isSandboxInit(selfPid: number, stats: ProcStat[]): boolean {
  return selfPid === 1 || stats.find((s) => s.pid === selfPid)?.ppid === 1;
}

/** What {@link agentPids} spares besides the agent itself. */
export interface AgentPidsOptions {
  /** The agent's pid (default `process.pid`); its ancestors (tini, pid 1) are the agent's too. */
  selfPid?: number;
  /** A process whose command line contains one of these belongs to the agent (the host's bridge to its socket). */
  commandLinesWith?: readonly string[];
  /** Default /proc. */
  procDir?: string;
}

/**
 * The pids of `stats` that must never be stopped or killed on the sandbox's behalf: the agent, its
 * ancestors (tini as pid 1) and the host's bridges to it found by command line (a bridge that wrote its
 * pid, see bridge-pids.ts, is best left out of `stats` altogether).
 */
export function agentPids(stats: ProcStat[], options: AgentPidsOptions = {}): Set<number> {
  const selfPid = options.selfPid ?? process.pid;
  const needles = (options.commandLinesWith ?? []).filter((s) => s.length > 0);
  const procDir = options.procDir ?? '/proc';
  const byPid = new Map(stats.map((s) => [s.pid, s]));
  const spared = new Set<number>();
  for (let pid: number | undefined = selfPid; pid !== undefined && pid > 0 && !spared.has(pid); pid = byPid.get(pid)?.ppid) spared.add(pid);
  if (needles.length > 0) {
    for (const s of stats) {
      if (spared.has(s.pid)) continue;
      const cmdline = readCmdline(procDir, s.pid);
      if (needles.some((needle) => cmdline.includes(needle))) spared.add(s.pid);
    }
  }
  return spared;
}

/** A process's command line with spaces for its NULs ('' once it exited). */
export function readCmdline(procDir: string, pid: number): string {
  try {
    return readFileSync(`${procDir}/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** Send `signal` to `pid` (negative: a process group). @returns false when it is already gone. */
export function trySignal(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * SIGKILL `rootPid`'s process group and every descendant. Repeats freeze (SIGSTOP) and collect until no
 * new process appears (at most `maxRounds` rounds), then kills them all.
 * @returns the pids that were signalled.
 */
export function killTree(rootPid: number, maxRounds = 8): number[] {
  let tree = new Set<number>([rootPid]);
  trySignal(-rootPid, 'SIGSTOP');
  for (let round = 0; round < maxRounds; round++) {
    const next = collectTree(rootPid, tree, listProcStats());
    next.delete(process.pid);
    const grew = [...next].some((pid) => !tree.has(pid));
    for (const pid of next) if (!tree.has(pid)) trySignal(pid, 'SIGSTOP');
    tree = new Set([...tree, ...next]);
    if (!grew) break;
  }
  trySignal(-rootPid, 'SIGKILL');
  for (const pid of tree) trySignal(pid, 'SIGKILL');
  return [...tree];
}
