/**
 * One process started by the agent: `/bin/bash -c cmd` in its own process group (on pipes, or on a
 * terminal: see `process-io.ts`), its output kept in two bounded rings with absolute offsets, any number of subscribers reading from those rings at their own
 * pace, stdin (when asked for), signals, a deadline that kills the whole tree, and its exit.
 *
 * Flow control: the child's pipes are read continuously into the rings, except when an attached
 * subscriber lags by half a ring (less for rings under 128 KiB, so that one more pipe read still fits);
 * then that pipe is paused (the process blocks on write,
 * as with any slow pipe) until subscribers catch up. Without subscribers nothing is paused and old
 * bytes are dropped.
 */
import type { Readable, Writable } from 'node:stream';
import { RamifyError, type AgentExit, type ProcessInfo, type PtySize } from '@ramify/contracts';
import { OutputRing } from './output-ring.js';
import { killTree } from './proc-tree.js';
import { startIo, type IoSpec, type OutputFd, type ProcessIo, type RawExit } from './process-io.js';

export type { OutputFd } from './process-io.js';

/** Largest chunk one pipe read delivers (libuv reads at most 64 KiB at a time). */
const PIPE_READ_MAX_BYTES = 64 * 1024;
/** After a failed stdin write, how long to wait for the process's exit to be seen, ms. */
const STDIN_EXIT_GRACE_MS = 500;

/** A reader of a process's output (one per client subscription). */
export interface OutputSubscriber {
  /** Next absolute offset to deliver, per stream. */
  cursor: Record<OutputFd, number>;
  /** Called when new output or the exit is available. */
  notify(): void;
}

/**
 * Everything needed to spawn; resolved by the process table (env merged, user looked up, cwd checked).
 * The I/O fields are {@link IoSpec}'s (`pty`: stdout carries all the output; stdin is the terminal);
 * `cmd` becomes its `file` and `args`.
 */
export interface SpawnSpec extends Omit<IoSpec, 'file' | 'args'> {
  cmd: string;
  /** 0 = no deadline. */
  timeoutMs: number;
  ringBytes: number;
  /** How long to wait for the pipes to close after the process exited (background children may hold them). */
  exitGraceMs: number;
  /**
   * Start it with an OOM score adjustment of 0 whatever the agent's own (the agent protects itself with
   * -1000, which children inherit): `/bin/sh` writes `/proc/self/oom_score_adj` and execs bash, so no
   * child can be forked before it is reset. Only where a kernel OOM killer chooses victims (microVMs).
   */
  resetOomScore?: boolean;
  /**
   * Called when the process died of SIGKILL the agent did not send for its deadline, before its exit is
   * settled: a kernel OOM kill is reported by then, and {@link ManagedProcess.markOomKilled} still counts.
   */
  onKilled?: (pid: number) => void;
}

/**
 * argv of the OOM-score reset (see {@link SpawnSpec.resetOomScore}): the shell's `$1` is the command, so the
 * process becomes exactly `/bin/bash -c cmd` after the exec (same pid, same argv).
 */
const RESET_OOM_SCORE_ARGV = ['-c', '{ echo 0 > /proc/self/oom_score_adj; } 2>/dev/null; exec /bin/bash -c "$1"', 'ramify-exec'];

export class ManagedProcess {
  readonly pid: number;
  readonly cmd: string;
  readonly cwd: string;
  readonly startedAt = new Date().toISOString();
  readonly rings: Record<OutputFd, OutputRing>;
  /** Set once the process exited and its pipes closed (or the grace period ended). */
  exit: AgentExit | undefined;
  /** Ring ends at the moment of {@link exit}: subscribers get output up to here, then the exit. */
  finalEnds: Record<OutputFd, number> | undefined;

  private readonly io: ProcessIo;
  private readonly subscribers = new Set<OutputSubscriber>();
  private readonly exitWaiters: Array<(exit: AgentExit) => void> = [];
  private readonly openPipes = new Set<OutputFd>();
  private readonly paused = new Set<OutputFd>();
  /**
   * Chunks read from a paused pipe, not yet in the ring. Node may deliver data after `pause()` (and
   * resumes child stdio by itself when the child exits), so pausing alone cannot bound the ring's lag.
   */
  private readonly held: Record<OutputFd, Buffer[]> = { 1: [], 2: [] };
  private rawExit: RawExit | undefined;
  /** Resolves when the process exited (before its pipes closed). */
  private readonly rawExited: Promise<void>;
  private timedOut = false;
  private oomKilled = false;
  private deadline: NodeJS.Timeout | undefined;
  private grace: NodeJS.Timeout | undefined;
  private stdinOpen: boolean;
  private readonly onFinished: (p: ManagedProcess) => void;
  /** Pause a pipe once a subscriber lags this much: one more read still fits in the ring. */
  private readonly pauseAtBytes: number;
  /** Resume it once every subscriber lags no more than this. */
  private readonly resumeAtBytes: number;

  /**
   * Spawn the process. `onFinished` runs once when {@link exit} is set.
   * @throws RamifyError INTERNAL when the kernel refuses to start /bin/bash; PTY_SIZE_INVALID.
   */
  constructor(private readonly spec: SpawnSpec, onFinished: (p: ManagedProcess) => void) {
    this.cmd = spec.cmd;
    this.cwd = spec.cwd;
    this.onFinished = onFinished;
    this.rings = { 1: new OutputRing(spec.ringBytes), 2: new OutputRing(spec.ringBytes) };
    this.pauseAtBytes = Math.max(0, Math.min(spec.ringBytes / 2, spec.ringBytes - PIPE_READ_MAX_BYTES));
    this.resumeAtBytes = Math.min(spec.ringBytes / 4, this.pauseAtBytes);
    const [file, args]: [string, string[]] = spec.resetOomScore ? ['/bin/sh', [...RESET_OOM_SCORE_ARGV, spec.cmd]] : ['/bin/bash', ['-c', spec.cmd]];
    this.io = startIo({ file, args, cwd: spec.cwd, env: spec.env, uid: spec.uid, gid: spec.gid, keepStdin: spec.keepStdin, pty: spec.pty });
    this.pid = this.io.pid;
    this.stdinOpen = this.io.input !== null;
    // A terminal's input is its master, also the output stream: its errors are the output's.
    if (!spec.pty) this.io.input?.on('error', () => {
      this.stdinOpen = false;
    });
    for (const [fd, stream] of this.io.outputs) {
      this.openPipes.add(fd);
      this.wire(fd, stream);
    }
    let onRawExit!: () => void;
    this.rawExited = new Promise((resolve) => (onRawExit = resolve));
    this.io.onExit(({ code, signal }) => {
      this.rawExit = { code, signal };
      onRawExit();
      if (this.deadline) clearTimeout(this.deadline);
      if (signal === 'SIGKILL' && !this.timedOut) spec.onKilled?.(this.pid);
      this.maybeFinish();
      if (!this.exit) this.armGrace();
    });
    if (spec.timeoutMs > 0) this.deadline = setTimeout(() => this.expire(), spec.timeoutMs);
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  info(): ProcessInfo {
    return {
      pid: this.pid,
      cmd: this.cmd,
      cwd: this.cwd,
      startedAt: this.startedAt,
      running: this.running,
      exitCode: this.exit?.exitCode ?? null,
      signal: this.exit?.signal ?? null,
      error: this.exit?.error ?? null,
      stdoutBytes: this.rings[1].end,
      stderrBytes: this.rings[2].end,
      ...(this.io.size ? { pty: { ...this.io.size } } : {}),
    };
  }

  /**
   * Resize its terminal (its foreground process group gets SIGWINCH).
   * @throws RamifyError NOT_A_PTY (started on pipes), PROCESS_EXITED (details as {@link sendStdin}),
   *   PTY_SIZE_INVALID.
   */
  resize(size: PtySize): void {
    if (!this.spec.pty) throw new RamifyError('NOT_A_PTY', `process ${this.pid} was started without a terminal`, { pid: this.pid });
    const exited = this.exitedError('its terminal is gone');
    if (exited) throw exited;
    this.io.resize(size);
  }

  /**
   * Record that this process, or one of its tree, was killed because the sandbox ran out of memory: its
   * exit (when it comes) says `error: 'oom'`. A no-op once the exit is settled.
   */
  markOomKilled(): void {
    if (!this.exit) this.oomKilled = true;
  }

  /** Resolves with the exit (at once if already exited). */
  waitExit(): Promise<AgentExit> {
    if (this.exit) return Promise.resolve(this.exit);
    return new Promise((resolve) => this.exitWaiters.push(resolve));
  }

  subscribe(sub: OutputSubscriber): void {
    this.subscribers.add(sub);
    sub.notify();
  }

  unsubscribe(sub: OutputSubscriber): void {
    this.subscribers.delete(sub);
    this.consumed();
  }

  /** A subscriber advanced its cursor: move held output into the ring and resume pipes as room allows. */
  consumed(): void {
    for (const fd of [...this.paused]) {
      const held = this.held[fd];
      let moved = false;
      while (held.length > 0 && this.maxLag(fd) <= this.pauseAtBytes) {
        this.rings[fd].append(held.shift() as Buffer);
        moved = true;
      }
      if (held.length === 0 && this.maxLag(fd) <= this.resumeAtBytes) {
        this.paused.delete(fd);
        this.pipe(fd)?.resume();
        this.maybeFinish();
      }
      if (moved) for (const sub of this.subscribers) sub.notify();
    }
  }

  /**
   * Write to stdin; resolves once the data was handed to the pipe.
   * @throws RamifyError PROCESS_EXITED (details `pid`, `exitCode`, `signal`) when the process has exited
   *   (also when it exits while the write fails for want of a reader); INVALID_STATE when stdin was not
   *   requested, was closed with {@link closeStdin}, or the process closed it while running.
   */
  async sendStdin(data: Uint8Array): Promise<void> {
    const stdin = this.requireStdin();
    const failure = await new Promise<Error | null | undefined>((resolve) => stdin.write(data, resolve));
    if (!failure) return;
    // A write fails (EPIPE) once no reader is left, usually because the process is exiting: give its
    // exit a moment to be seen so the error says so.
    await Promise.race([this.rawExited, new Promise((resolve) => setTimeout(resolve, STDIN_EXIT_GRACE_MS).unref())]);
    throw this.exitedError() ?? new RamifyError('INVALID_STATE', `stdin of process ${this.pid} was closed by the process: ${failure.message}`, { pid: this.pid });
  }

  /**
   * Close stdin (EOF for the process). @throws RamifyError PROCESS_EXITED, INVALID_STATE like {@link
   * sendStdin}; INVALID_STATE on a terminal (send Ctrl-D, byte 4, instead: closing would hang it up).
   */
  closeStdin(): void {
    if (this.spec.pty) throw new RamifyError('INVALID_STATE', `process ${this.pid} runs on a terminal: send Ctrl-D (byte 4) for end of input`, { pid: this.pid });
    this.requireStdin().end();
    this.stdinOpen = false;
  }

  /**
   * Send `signal` to the process group.
   * @throws RamifyError PROCESS_NOT_FOUND when the process already exited (nothing to signal; the SDK's
   *   `kill` answers false, as for an unknown pid); BAD_REQUEST for an unknown signal.
   */
  signal(signal: string): void {
    if (this.exit) throw new RamifyError('PROCESS_NOT_FOUND', `process ${this.pid} is not running (it already exited)`, { pid: this.pid });
    try {
      process.kill(-this.pid, signal);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ERR_UNKNOWN_SIGNAL' || code === 'EINVAL') throw new RamifyError('BAD_REQUEST', `unknown signal '${signal}'`);
      if (code !== 'ESRCH') throw err;
    }
  }

  private requireStdin(): Writable {
    const input = this.io.input;
    if (!input) throw new RamifyError('INVALID_STATE', `process ${this.pid} was started without stdin`, { pid: this.pid });
    const exited = this.exitedError();
    if (exited) throw exited;
    if (!this.stdinOpen || input.destroyed) throw new RamifyError('INVALID_STATE', `stdin of process ${this.pid} is closed`, { pid: this.pid });
    return input;
  }

  /** `PROCESS_EXITED` naming how the process ended, once it has (its pipes may still be open); else undefined. */
  private exitedError(what = 'its stdin is gone'): RamifyError | undefined {
    if (!this.rawExit) return undefined;
    const { code, signal } = this.rawExit;
    const how = this.timedOut ? 'was killed at its deadline' : signal ? `was killed by ${signal}` : code !== null ? `exited with code ${code}` : 'exited';
    return new RamifyError('PROCESS_EXITED', `process ${this.pid} ${how}; ${what}`, { pid: this.pid, exitCode: code, signal });
  }

  private pipe(fd: OutputFd): Readable | undefined {
    return this.io.outputs.find(([n]) => n === fd)?.[1];
  }

  private wire(fd: OutputFd, stream: Readable): void {
    stream.on('data', (chunk: Buffer) => {
      // Append only while every subscriber lags at most `pauseAtBytes`: then one read fits in the ring.
      if (!this.exit && (this.held[fd].length > 0 || this.maxLag(fd) > this.pauseAtBytes)) {
        this.held[fd].push(chunk);
        this.paused.add(fd);
        stream.pause();
        return;
      }
      this.rings[fd].append(chunk);
      if (!this.exit && this.maxLag(fd) > 0 && this.maxLag(fd) >= this.pauseAtBytes) {
        this.paused.add(fd);
        stream.pause();
      }
      for (const sub of this.subscribers) sub.notify();
    });
    stream.on('error', () => undefined);
    stream.on('close', () => {
      this.openPipes.delete(fd);
      this.maybeFinish();
    });
  }

  private maxLag(fd: OutputFd): number {
    let lag = 0;
    for (const sub of this.subscribers) lag = Math.max(lag, this.rings[fd].end - sub.cursor[fd]);
    return lag;
  }

  private expire(): void {
    if (this.rawExit) return;
    this.timedOut = true;
    killTree(this.pid);
  }

  /**
   * After the exit, wait for the pipes to close, but not forever: background children may hold them.
   * While a pipe is paused for a slow subscriber the remaining output is ours to deliver, so keep waiting.
   */
  private armGrace(): void {
    this.grace = setTimeout(() => {
      if (this.paused.size > 0) this.armGrace();
      else this.finish();
    }, this.spec.exitGraceMs);
  }

  private maybeFinish(): void {
    if (this.rawExit && this.openPipes.size === 0 && this.held[1].length === 0 && this.held[2].length === 0) this.finish();
  }

  private finish(): void {
    if (this.exit || !this.rawExit) return;
    if (this.grace) clearTimeout(this.grace);
    if (this.deadline) clearTimeout(this.deadline);
    // Pipes still held by background children keep being read, but must never block anyone now.
    for (const fd of this.paused) {
      for (const chunk of this.held[fd].splice(0)) this.rings[fd].append(chunk);
      this.pipe(fd)?.resume();
    }
    this.paused.clear();
    this.exit = {
      exitCode: this.rawExit.code,
      signal: this.rawExit.signal,
      error: this.timedOut ? 'timeout' : this.oomKilled ? 'oom' : null,
    };
    this.finalEnds = { 1: this.rings[1].end, 2: this.rings[2].end };
    for (const w of this.exitWaiters.splice(0)) w(this.exit);
    for (const sub of this.subscribers) sub.notify();
    this.onFinished(this);
  }
}
