/**
 * What the agent does about a sandbox running out of memory, by who kills (`serve --oom-killer`):
 * - `agent` (gVisor, which has no OOM killer): the {@link OomGuard} chooses and kills, and uploads stop
 *   with `NO_SPACE` before file data would pass its reserve (the guard cannot kill the agent);
 * - `kernel` (microVMs): the guest kernel chooses and kills; the agent keeps itself out of its choice
 *   (`oom_score_adj` -1000), starts commands at 0, and the {@link KernelOomWatcher} reports each kill.
 *   After every identity (a restore may give the VM less memory than its image was booted with) it sizes
 *   `/dev/shm` to half the guest's memory, as Linux does at mount: a tmpfs sized for more memory than the
 *   guest has would fill it with pages nothing can free, and a kernel left without killable processes
 *   panics.
 * Either way a kill marks the command whose process tree held the victim (its exit says `oom`) and
 * becomes an `OomKillEvent` for the host. Without a mode nothing is watched, and neither mode acts
 * unless the agent is a sandbox's init or its child (an agent run on a host, as in tests, must never kill
 * the host's processes nor change its own OOM score there).
 */
import { execFile } from 'node:child_process';
import type { OomKillEvent } from '@ramify/contracts';
import type { AgentEvents } from '../agent-events.js';
import type { ProcessTable, SandboxIdentityState } from '../process-table.js';
import type { BridgePids } from '../bridge-pids.js';
import { isSandboxInit, listProcStats } from '../proc-tree.js';
import { KernelOomWatcher, protectFromOomKiller, type KernelKill } from './kernel-oom.js';
import { readMemory } from './meminfo.js';
import { OomGuard, type GuardKill } from './oom-guard.js';

/** Who stops a process that exhausts the sandbox's memory. */
export type OomKillerMode = 'agent' | 'kernel';

export interface OomWatchOptions {
  events: AgentEvents;
  identity: SandboxIdentityState;
  /** Command lines of processes the guard never kills (the host's bridge to the agent's socket). */
  spareCommandLinesWith: string[];
  /** Bridges known by pid (never killed, never looked up in /proc). */
  bridges?: BridgePids;
  log: (line: string) => void;
}

export class OomWatch {
  /** Whether commands must reset their OOM score (the agent lowered its own). */
  readonly resetOomScore: boolean;
  readonly #mode: OomKillerMode | undefined;
  readonly #options: OomWatchOptions;
  #table: ProcessTable | undefined;
  #guard: OomGuard | undefined;
  #kernel: KernelOomWatcher | undefined;
  /** The size /dev/shm was last remounted with, bytes (kept in a checkpoint with the mount it describes). */
  #shmSizeBytes: number | undefined;

  /** In `kernel` mode this already lowers the agent's own OOM score (before any command starts). */
  constructor(mode: OomKillerMode | undefined, options: OomWatchOptions) {
    this.#options = options;
    if (mode !== undefined && !isSandboxInit(process.pid, listProcStats())) {
      options.log(`--oom-killer ${mode} ignored: the agent (pid ${process.pid}) is not a sandbox's init or its child`);
      mode = undefined;
    }
    this.#mode = mode;
    let protectedSelf = false;
    if (mode === 'kernel') {
      const why = protectFromOomKiller();
      if (why) options.log(`cannot keep the agent out of the kernel's OOM killer: ${why}`);
      protectedSelf = why === null;
    }
    this.resetOomScore = protectedSelf;
  }

  /** Start watching; kills mark commands of `table`. */
  start(table: ProcessTable): void {
    this.#table = table;
    if (this.#mode === 'agent') {
      this.#guard = new OomGuard({ onKill: (kill) => this.#guardKilled(kill), log: this.#options.log, spareCommandLinesWith: this.#options.spareCommandLinesWith, bridges: this.#options.bridges });
      this.#guard.start();
    } else if (this.#mode === 'kernel') {
      this.#kernel = new KernelOomWatcher({ onKill: (kill) => this.#kernelKilled(kill), log: this.#options.log });
      if (!this.#kernel.start()) this.#options.log('this kernel does not count OOM kills (/proc/vmstat oom_kill): they will not be reported');
    }
  }

  /** A command died of a SIGKILL the agent did not send: find out now whether the kernel's OOM killer sent it. */
  commandKilled(): void {
    this.#kernel?.check();
  }

  /**
   * After an identity: in `kernel` mode, size `/dev/shm` to half of `MemTotal` (`mount -o remount,size=`),
   * unless it was already sized so (the common case: a restore with its image's memory). Failures are logged (a /dev/shm already holding more keeps its size), never thrown.
   */
  async identityApplied(): Promise<void> {
    if (this.#mode !== 'kernel') return;
    const limit = readMemory()?.limitBytes;
    if (!limit) return;
    const size = Math.floor(limit / 2 / 4096) * 4096;
    // Already that size (a restore with the memory of the image it was made from, a pool claim): no
    // `mount` process, which costs a microVM under TCG hundreds of milliseconds.
    if (size === this.#shmSizeBytes) return;
    const error = await new Promise<string | null>((resolve) => {
      execFile('mount', ['-o', `remount,size=${size}`, '/dev/shm'], { timeout: 10_000 }, (err, _stdout, stderr) => resolve(err ? String(stderr).trim() || err.message : null));
    });
    // Tried once per size: a remount that failed fails again with the same size.
    this.#shmSizeBytes = size;
    if (error) this.#options.log(`cannot size /dev/shm to ${Math.round(size / 1048576)} MiB: ${error}`);
  }

  /** Whether `bytes` more of file data fit (the guard's reserve); always true unless the agent is the OOM killer. */
  roomForFiles(bytes: number): boolean {
    return this.#guard?.roomForFiles(bytes) ?? true;
  }

  stop(): void {
    this.#guard?.stop();
    this.#kernel?.stop();
  }

  #guardKilled(kill: GuardKill): void {
    const command = this.#table?.commandOf(kill.pid, kill.stats);
    command?.markOomKilled();
    this.#emit({ pid: kill.pid, cmd: kill.cmd, commandPid: command?.pid ?? null, killer: 'agent', rssBytes: kill.rssBytes, usedBytes: kill.sample.usedBytes, limitBytes: kill.sample.limitBytes });
  }

  #kernelKilled(kill: KernelKill | 'unattributed'): void {
    if (kill === 'unattributed') {
      this.#options.log('the kernel killed a process for running out of memory (which one, its log did not say)');
      return;
    }
    const command = this.#table?.commandOf(kill.pid);
    command?.markOomKilled();
    this.#options.log(`out of memory: the kernel killed pid ${kill.pid} (${kill.name})${command ? ` of command ${command.pid}` : ''}`);
    // What was in use at the kill the kernel's report does not say (it is freed by now); the limit is MemTotal.
    this.#emit({ pid: kill.pid, cmd: kill.name, commandPid: command?.pid ?? null, killer: 'kernel', rssBytes: kill.rssBytes, usedBytes: null, limitBytes: readMemory()?.limitBytes ?? null });
  }

  #emit(fields: Omit<OomKillEvent, 'type' | 'sandboxId' | 'at'>): void {
    this.#options.events.emit({ type: 'oom', sandboxId: this.#options.identity.sandboxId ?? null, at: Date.now(), ...fields });
  }
}
