/**
 * Readying a gVisor checkpoint. This runsc kills a sandbox whose checkpoint meets a connected
 * non-loopback TCP endpoint (SYN_SENT and TIME_WAIT too; RUNTIME-GVISOR.md). Checking /proc/net/tcp is
 * not enough: a process can open a connection between the check and the checkpoint (a retry loop of
 * `curl` does, every time). So the check stops every process but the agent and the host's bridge
 * (SIGSTOP) once the network is quiet, then checks again: a stopped process cannot connect, and what
 * the second check sees is what the checkpoint meets. Stopped processes continue (SIGCONT) at the
 * agent's next host connection (the host reconnects after the restore, or after a checkpoint that
 * failed), or after {@link THAW_AFTER_MS} if no host comes. Processes something else had stopped stay
 * stopped.
 */
import { RamifyError, type QuiesceReport } from '@ramify/contracts';
import type { BridgePids } from './bridge-pids.js';
import { agentPids, isSandboxInit, listProcStats, trySignal, type ProcStat } from './proc-tree.js';
import { networkEndpoints } from './net-endpoints.js';

/** A freeze no host connection ended is undone after this long, ms (the checkpoint would have happened by then). */
export const THAW_AFTER_MS = 120_000;

/** How often the freeze lists /proc again for processes forked meanwhile, at most. */
const FREEZE_ROUNDS = 8;

export interface FreezerOptions {
  /** The agent's pid (default `process.pid`): never stopped, nor are its ancestors. */
  selfPid?: number;
  /** A process whose command line contains one of these is never stopped (the host's bridge to the agent socket). */
  spareCommandLinesWith?: string[];
  /** Bridges known by pid: never stopped, and their /proc/PID is never read. */
  bridges?: BridgePids;
  /** Default /proc. */
  procDir?: string;
}

/**
 * Stops and continues the sandbox's processes for a checkpoint. Only the processes it stopped are
 * continued.
 */
export class ProcessFreezer {
  readonly #selfPid: number;
  readonly #spare: string[];
  readonly #procDir: string;
  readonly #bridges: BridgePids | undefined;
  readonly #stopped = new Set<number>();
  #thawTimer: NodeJS.Timeout | undefined;

  constructor(options: FreezerOptions = {}) {
    this.#selfPid = options.selfPid ?? process.pid;
    this.#spare = (options.spareCommandLinesWith ?? []).filter((s) => s.length > 0);
    this.#procDir = options.procDir ?? '/proc';
    this.#bridges = options.bridges;
  }

  /** Pids this freezer stopped and has not continued yet. */
  get stopped(): readonly number[] {
    return [...this.#stopped];
  }

  /**
   * SIGSTOP every running process but the agent, its ancestors and the spared ones, parents first;
   * repeats until a round finds nothing new (a process forked meanwhile). Arms the
   * {@link THAW_AFTER_MS} safety thaw.
   * @returns how many processes are stopped.
   * @throws RamifyError `BAD_REQUEST` when the agent is not the sandbox's init or its child (not in a sandbox).
   */
  freeze(): number {
    let stats = this.#list();
    this.#requireSandboxInit(stats);
    for (let round = 0; round < FREEZE_ROUNDS; round++, stats = this.#list()) {
      const spared = this.#sparedPids(stats);
      let stoppedNow = 0;
      // Parents before their children: a stopped shell cannot see its job stop (and take the terminal back).
      for (const s of byDepth(stats)) {
        if (spared.has(s.pid) || this.#stopped.has(s.pid) || s.state === 'Z' || s.state === 'X' || s.state === 'T' || s.state === 't') continue;
        if (!trySignal(s.pid, 'SIGSTOP')) continue; // Exited meanwhile.
        this.#stopped.add(s.pid);
        stoppedNow++;
      }
      if (stoppedNow === 0) break;
    }
    clearTimeout(this.#thawTimer);
    this.#thawTimer = setTimeout(() => this.thaw(), THAW_AFTER_MS);
    this.#thawTimer.unref();
    return this.#stopped.size;
  }

  /** SIGCONT what {@link freeze} stopped (a no-op when nothing is). @returns how many it continued. */
  thaw(): number {
    clearTimeout(this.#thawTimer);
    this.#thawTimer = undefined;
    const count = this.#stopped.size;
    // Children before their parents (the reverse of the freeze): a shell wakes to its job running again.
    const order = new Map(byDepth(this.#list()).map((st, i) => [st.pid, i]));
    const pids = [...this.#stopped].sort((a, b) => (order.get(b) ?? -1) - (order.get(a) ?? -1));
    for (const pid of pids) trySignal(pid, 'SIGCONT');
    this.#stopped.clear();
    return count;
  }

  /**
   * Safety: stopping "every other process" is only meant inside a sandbox, where the agent is its pid 1 or
   * a child of it (tini). An agent anywhere else (a test on a host) refuses rather than stop the host.
   */
  #requireSandboxInit(stats: ProcStat[]): void {
    if (!isSandboxInit(this.#selfPid, stats)) {
      const parent = stats.find((s) => s.pid === this.#selfPid)?.ppid;
      throw new RamifyError('BAD_REQUEST', `refusing to stop processes: the agent (pid ${this.#selfPid}, parent ${parent ?? 'unknown'}) is not a sandbox's init or its child`);
    }
  }

  /** /proc without the bridges that wrote their pids (see bridge-pids.ts for why they are not looked up). */
  #list(): ProcStat[] {
    return listProcStats(this.#procDir, this.#bridges?.list());
  }

  #sparedPids(stats: ProcStat[]): Set<number> {
    return agentPids(stats, { selfPid: this.#selfPid, commandLinesWith: this.#spare, procDir: this.#procDir });
  }
}

/** `stats` ordered so that every process comes after its parent (by depth in the process tree). */
export function byDepth(stats: ProcStat[]): ProcStat[] {
  const byPid = new Map(stats.map((s) => [s.pid, s]));
  const depth = new Map<number, number>();
  const depthOf = (pid: number): number => {
    const known = depth.get(pid);
    if (known !== undefined) return known;
    depth.set(pid, 0); // A cycle (pids reused mid-read) ends here.
    const parent = byPid.get(pid)?.ppid;
    const d = parent !== undefined && parent !== pid && byPid.has(parent) ? depthOf(parent) + 1 : 0;
    depth.set(pid, d);
    return d;
  };
  return [...stats].sort((a, b) => depthOf(a.pid) - depthOf(b.pid) || a.pid - b.pid);
}

/**
 * One quiesce attempt: when no endpoint is connected, freeze, and check again (continuing everything if
 * one appeared after all). `frozen: true` leaves the processes stopped until the next host connection.
 */
export async function quiesceNetwork(freezer: ProcessFreezer, procNet = '/proc/net', hostChannelPort?: number): Promise<QuiesceReport> {
  const before = await networkEndpoints(procNet, hostChannelPort);
  if (before.endpoints.length > 0) return { frozen: false, endpoints: before.endpoints };
  freezer.freeze();
  const after = await networkEndpoints(procNet, hostChannelPort);
  if (after.endpoints.length > 0) {
    freezer.thaw();
    return { frozen: false, endpoints: after.endpoints };
  }
  return { frozen: true, endpoints: [] };
}
