/**
 * SIGWINCH after a terminal's resize, where the kernel does not send it. Linux's TIOCSWINSZ signals the
 * terminal's foreground process group itself. gVisor (runsc 20240729, `devpts` `setWindowSize`) only
 * stores the size, and its /proc shows no foreground group (`tpgid` 0, `tty_nr` 0), so programs never
 * learn of the resize. Where /proc names no foreground group, the agent signals every process group of
 * the terminal's session instead: the foreground one among them, and background jobs, which ignore
 * SIGWINCH unless they handle it (and then only re-read the size).
 *
 * The session is found from its leader down (`/proc/PID/task/TID/children`), never by reading all of
 * /proc: that would look up the host's bridges, whose procfs entries runsc then never frees
 * (see bridge-pids.ts), and a terminal may be resized often.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { parseProcStat, type ProcStat } from './proc-tree.js';

/** Field 8 of /proc/PID/stat: the foreground group of the process's terminal (<= 0: none shown). */
export function parseTpgid(statText: string): number {
  const fields = statText.slice(statText.lastIndexOf(')') + 2).split(' ');
  const tpgid = Number(fields[5]);
  return Number.isInteger(tpgid) ? tpgid : -1;
}

/**
 * The process groups to signal after a resize of the terminal whose session `leader` leads: none when
 * the kernel shows a foreground group (it signalled it), else every live group of the session in `stats`.
 */
export function winchGroups(leader: number, leaderTpgid: number, stats: readonly ProcStat[]): number[] {
  if (leaderTpgid > 0) return [];
  const groups = new Set<number>();
  for (const s of stats) if (s.session === leader && s.state !== 'Z' && s.pgrp > 0) groups.add(s.pgrp);
  return [...groups];
}

/** After a resize of `leader`'s terminal: SIGWINCH to its session's groups when the kernel sent none. */
export function signalResize(leader: number): void {
  let tpgid: number;
  try {
    tpgid = parseTpgid(readFileSync(`/proc/${leader}/stat`, 'utf8'));
  } catch {
    return; // The leader is gone; nothing reads the size any more.
  }
  if (tpgid > 0) return;
  for (const group of winchGroups(leader, tpgid, descendantStats(leader))) {
    try {
      process.kill(-group, 'SIGWINCH');
    } catch {
      // The group ended meanwhile.
    }
  }
}

/** `/proc/PID/stat` of `root` and of its descendants (processes that end meanwhile are skipped). */
function descendantStats(root: number): ProcStat[] {
  const out: ProcStat[] = [];
  const seen = new Set<number>();
  for (const queue = [root]; queue.length > 0; ) {
    const pid = queue.pop() as number;
    if (seen.has(pid)) continue;
    seen.add(pid);
    try {
      const stat = parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      if (stat) out.push(stat);
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ')) if (child.trim()) queue.push(Number(child));
      }
    } catch {
      // Ended between the lookups.
    }
  }
  return out;
}
