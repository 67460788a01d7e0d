/**
 * The processes this agent started: running ones plus the most recent exited ones (so a client can
 * still attach, read their output and learn their exit after reconnecting). Also resolves everything a
 * start needs: cwd check, user lookup, environment merge.
 */
import type { SyscallHelper } from './syscall-helper.js';
import { stat } from 'node:fs/promises';
import { RamifyError, checkPtySize, type AgentStartOptions, type ProcessInfo } from '@ramify/contracts';
import { ManagedProcess } from './managed-process.js';
import { collectTree, listProcStats, type ProcStat } from './proc-tree.js';
import { lookupUser } from './users.js';

export interface ProcessTableOptions {
  /** Per-stream ring size in bytes (default 8 MiB). */
  ringBytes?: number;
  /** How many exited processes are remembered (default 200). */
  maxExited?: number;
  /** Output bytes kept across all remembered exited processes; oldest are emptied first (default 64 MiB). */
  exitedRetainBytes?: number;
  /** Wait for pipes held by background children after exit, in ms (default 250). */
  exitGraceMs?: number;
  /** Working directory when none is given (default `/root`; with `user`, that user's home if it exists, else `/`). */
  defaultCwd?: string;
  /** Environment every command starts from (default: the agent's own, with a PATH). */
  baseEnv?: Record<string, string>;
  /** Start commands with an OOM score adjustment of 0 (see `SpawnSpec.resetOomScore`); default false. */
  resetOomScore?: boolean;
  /** Called when a command died of a SIGKILL the agent did not send (see `SpawnSpec.onKilled`). */
  onKilled?: (pid: number) => void;
}

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** A terminal's environment before the sandbox's and the call's envs: xterm's capabilities, UTF-8 text. */
const TERMINAL_ENV = { TERM: 'xterm-256color', LANG: 'C.UTF-8' } as const;

/** Sandbox-wide settings from `setIdentity`. */
export interface SandboxIdentityState {
  sandboxId?: string;
  envs: Record<string, string>;
  /** Bytes the root filesystem fills, when `/` is a block device (see `root-disk.ts`). */
  rootFilesystemBytes?: number;
  /** Makes the hostname and clock system calls without a process each time (`syscall-helper.ts`); absent: the tools. */
  syscalls?: SyscallHelper | null;
}

export class ProcessTable {
  private readonly running = new Map<number, ManagedProcess>();
  /** Oldest first. */
  private exited: ManagedProcess[] = [];
  private readonly opts: Required<Omit<ProcessTableOptions, 'onKilled'>> & Pick<ProcessTableOptions, 'onKilled'>;

  constructor(private readonly identity: SandboxIdentityState, options: ProcessTableOptions = {}) {
    const inherited: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) inherited[k] = v;
    this.opts = {
      ringBytes: options.ringBytes ?? 8 * 1024 * 1024,
      maxExited: options.maxExited ?? 200,
      exitedRetainBytes: options.exitedRetainBytes ?? 64 * 1024 * 1024,
      exitGraceMs: options.exitGraceMs ?? 250,
      defaultCwd: options.defaultCwd ?? '/root',
      baseEnv: options.baseEnv ?? inherited,
      resetOomScore: options.resetOomScore ?? false,
      onKilled: options.onKilled,
    };
  }

  /**
   * Start a process.
   * With `pty`, on a terminal of that size, `TERM=xterm-256color` and `LANG=C.UTF-8` unless the
   * sandbox's or the call's envs say otherwise.
   * @throws RamifyError CWD_NOT_FOUND (cwd missing or not a directory), BAD_REQUEST (unknown user or
   *   bad options), PTY_SIZE_INVALID, INTERNAL (spawn failed).
   */
  async start(options: AgentStartOptions): Promise<ManagedProcess> {
    if (typeof options.cmd !== 'string') throw new RamifyError('BAD_REQUEST', 'cmd must be a string');
    const pty = options.pty ? checkPtySize(options.pty) : undefined;
    const user = options.user ? await lookupUser(options.user) : undefined;
    const cwd = options.cwd || (user && user.uid !== 0 ? await homeOrRoot(user.home) : this.opts.defaultCwd);
    await assertDirectory(cwd);
    const env: Record<string, string> = { PATH: DEFAULT_PATH, ...this.opts.baseEnv };
    if (user) Object.assign(env, { HOME: user.home, USER: user.name, LOGNAME: user.name });
    else if (!env.HOME) env.HOME = '/root';
    if (pty) Object.assign(env, TERMINAL_ENV);
    Object.assign(env, this.identity.envs, options.envs ?? {});
    if (this.identity.sandboxId) env.RAMIFY_SANDBOX_ID = this.identity.sandboxId;
    const timeoutMs = options.timeoutMs ?? 0;
    if (!Number.isFinite(timeoutMs) || timeoutMs < 0) throw new RamifyError('BAD_REQUEST', `timeoutMs must be >= 0, got ${timeoutMs}`);
    const proc = new ManagedProcess(
      {
        cmd: options.cmd,
        cwd,
        env,
        uid: user?.uid,
        gid: user?.gid,
        keepStdin: options.stdin === true || pty !== undefined,
        pty,
        timeoutMs,
        ringBytes: this.opts.ringBytes,
        exitGraceMs: this.opts.exitGraceMs,
        resetOomScore: this.opts.resetOomScore,
        onKilled: this.opts.onKilled,
      },
      (p) => this.finished(p),
    );
    this.exited = this.exited.filter((p) => p.pid !== proc.pid);
    this.running.set(proc.pid, proc);
    return proc;
  }

  /** @throws RamifyError PROCESS_NOT_FOUND when the pid is neither running nor remembered. */
  get(pid: number): ManagedProcess {
    const proc = this.running.get(pid) ?? this.exited.find((p) => p.pid === pid);
    if (!proc) throw new RamifyError('PROCESS_NOT_FOUND', `process ${pid} not found`, { id: String(pid) });
    return proc;
  }

  /**
   * Forget every exited process (running ones stay). For when the agent starts serving another sandbox:
   * a restore of an image into a new sandbox (a template's image, a fork, a snapshot) lists what runs and
   * what ran in that sandbox, not the setup commands of a template build or a parent's history.
   */
  forgetExited(): void {
    this.exited = [];
  }

  /**
   * The running command whose process tree (its process group and every descendant, see `collectTree`)
   * holds `pid`, or undefined. `stats` is a /proc snapshot taken while `pid` was alive (default: a fresh
   * one, in which an already reaped process belongs to no tree but its own command's).
   */
  commandOf(pid: number, stats?: ProcStat[]): ManagedProcess | undefined {
    const direct = this.running.get(pid);
    if (direct) return direct;
    const snapshot = stats ?? listProcStats();
    for (const proc of this.running.values()) if (collectTree(proc.pid, [proc.pid], snapshot).has(pid)) return proc;
    return undefined;
  }

  /** Running processes, then remembered exited ones (newest last). */
  list(): ProcessInfo[] {
    return [...this.running.values(), ...this.exited].map((p) => p.info());
  }

  private finished(proc: ManagedProcess): void {
    this.running.delete(proc.pid);
    this.exited.push(proc);
    while (this.exited.length > this.opts.maxExited) this.exited.shift();
    let held = this.exited.reduce((sum, p) => sum + p.rings[1].heldBytes + p.rings[2].heldBytes, 0);
    for (const p of this.exited) {
      if (held <= this.opts.exitedRetainBytes) break;
      held -= p.rings[1].heldBytes + p.rings[2].heldBytes;
      p.rings[1].clear();
      p.rings[2].clear();
    }
  }
}

/** A named user's home when it exists (system users often have none), else `/`. */
async function homeOrRoot(home: string): Promise<string> {
  const s = await stat(home).catch(() => undefined);
  return s?.isDirectory() ? home : '/';
}

async function assertDirectory(cwd: string): Promise<void> {
  try {
    const s = await stat(cwd);
    if (s.isDirectory()) return;
    throw new RamifyError('CWD_NOT_FOUND', `cwd '${cwd}' is not a directory`, { path: cwd });
  } catch (err) {
    if (err instanceof RamifyError) throw err;
    throw new RamifyError('CWD_NOT_FOUND', `cwd '${cwd}' does not exist`, { path: cwd });
  }
}
