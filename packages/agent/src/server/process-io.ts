/**
 * Starting a process and handing its I/O to a `ManagedProcess`, whatever carries it: three pipes (a
 * command) or a pseudo-terminal (a PTY, see `pty-addon.ts`). A terminal merges stdout and stderr into
 * one stream (fd 1), its input is the terminal's, and it can be resized.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants as fsConstants, openSync } from 'node:fs';
import { constants } from 'node:os';
import { Transform, type Readable, type Writable } from 'node:stream';
import { WriteStream } from 'node:tty';
import { RamifyError, checkPtySize, type PtySize } from '@ramify/contracts';
import { loadPtyAddon } from './pty-addon.js';
import { signalResize } from './pty-winch.js';
import { TerminalMaster } from './terminal-master.js';

export type OutputFd = 1 | 2;

/** How a process ended, as Node's `ChildProcess` reports it. */
export interface RawExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A started process's I/O. */
export interface ProcessIo {
  readonly pid: number;
  /** Output streams: fds 1 and 2 for pipes; fd 1 alone for a terminal. Each ends with 'close'. */
  readonly outputs: ReadonlyArray<readonly [OutputFd, Readable]>;
  /** Where input goes (the stdin pipe, or the terminal), or null when none was kept. */
  readonly input: Writable | null;
  /** The terminal's size (null for pipes). */
  readonly size: PtySize | null;
  /** Calls `listener` once, when the process has exited (its output streams may still be open). */
  onExit(listener: (exit: RawExit) => void): void;
  /**
   * Change the terminal's size; its foreground process group gets SIGWINCH (from the kernel, or from
   * the agent where the kernel sends none: see `pty-winch.ts`).
   * @throws RamifyError NOT_A_PTY for pipes, PTY_SIZE_INVALID for a bad size.
   */
  resize(size: PtySize): void;
}

/** What to start, resolved by the process table. */
export interface IoSpec {
  /** argv[0] (a path) and the rest. */
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  uid?: number;
  gid?: number;
  /** Keep a stdin pipe (pipes only; a terminal always takes input). */
  keepStdin: boolean;
  /** Start on a terminal of this size instead of pipes. */
  pty?: PtySize;
}

/**
 * Start `spec` on pipes or, with `spec.pty`, on a new pseudo-terminal (its session leader, the terminal
 * its controlling one).
 * @throws RamifyError INTERNAL when the kernel refuses to start it; PTY_SIZE_INVALID for a bad size.
 */
export function startIo(spec: IoSpec): ProcessIo {
  return spec.pty ? startPty(spec, checkPtySize(spec.pty)) : startPipes(spec);
}

function startPipes(spec: IoSpec): ProcessIo {
  const child = spawn(spec.file, spec.args, {
    cwd: spec.cwd,
    env: spec.env,
    detached: true,
    uid: spec.uid,
    gid: spec.gid,
    stdio: [spec.keepStdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  child.on('error', () => undefined);
  if (child.pid === undefined) throw new RamifyError('INTERNAL', `could not start ${spec.file}`);
  return {
    pid: child.pid,
    outputs: [[1, child.stdout as Readable], [2, child.stderr as Readable]],
    input: child.stdin,
    size: null,
    onExit: (listener) => child.once('exit', (code, signal) => listener({ code, signal })),
    resize: () => {
      throw new RamifyError('NOT_A_PTY', `process ${child.pid} was started without a terminal`, { pid: child.pid });
    },
  };
}

function startPty(spec: IoSpec, initial: PtySize): ProcessIo {
  const addon = loadPtyAddon();
  const env = Object.entries(spec.env).map(([k, v]) => `${k}=${v}`);
  let exited: RawExit | undefined;
  const listeners: Array<(exit: RawExit) => void> = [];
  let term: { fd: number; pid: number; pty: string };
  let drain: TerminalDrain | undefined;
  try {
    // uid/gid -1: keep the agent's. `true`: IUTF8, so line editing erases whole UTF-8 characters.
    term = addon.fork(spec.file, spec.args, env, spec.cwd, initial.cols, initial.rows, spec.uid ?? -1, spec.gid ?? -1, true, 'spawn-helper-unused', (code, signal) => {
      exited = signal > 0 ? { code: null, signal: signalName(signal) } : { code, signal: null };
      drain?.exited();
      for (const listener of listeners.splice(0)) listener(exited);
    });
  } catch (err) {
    throw new RamifyError('INTERNAL', `could not start ${spec.file} on a terminal: ${(err as Error).message}`);
  }
  // The master side: reading gives what the program writes, writing is typing.
  const master = new TerminalMaster(term.fd);
  drain = new TerminalDrain(master, term.pty);
  if (exited) drain.exited();
  let size = initial;
  return {
    pid: term.pid,
    outputs: [[1, drain.output]],
    input: master.input,
    get size() {
      return size;
    },
    onExit: (listener) => (exited ? queueMicrotask(() => listener(exited as RawExit)) : listeners.push(listener)),
    resize: (next) => {
      const checked = checkPtySize(next);
      addon.resize(term.fd, checked.cols, checked.rows);
      size = checked;
      signalResize(term.pid);
    },
  };
}

/**
 * All of a terminal's output, up to the program's exit. Linux answers a read of the master with EIO as
 * soon as the last holder of the terminal closed it, even while output written just before is still
 * on its way (we measured 0.3-5% of 200,000 bytes lost that way), so the agent holds the terminal open
 * itself and, once the program has exited, writes a random end mark through it: the terminal delivers
 * bytes in order, so when the mark comes out of the master everything written before it has too. The
 * mark is cut from the output, the agent's hold is released, and the output ends.
 */
class TerminalDrain {
  /** The master's bytes without the end mark; ends after the mark. */
  readonly output: Transform;
  private readonly mark = Buffer.from(`\x1b]ramify-end;${randomBytes(16).toString('hex').toUpperCase()}\x07`);
  private hold: WriteStream | undefined;
  private watching = false;
  private tail = Buffer.alloc(0);

  constructor(private readonly master: TerminalMaster, ptsPath: string) {
    try {
      this.hold = new WriteStream(openSync(ptsPath, fsConstants.O_RDWR | fsConstants.O_NOCTTY));
      this.hold.on('error', () => undefined);
    } catch {
      this.hold = undefined; // Without the hold the output still ends at EIO, possibly short.
    }
    this.output = new Transform({ transform: (chunk: Buffer, _enc, done) => done(null, this.scan(chunk)) });
    master.output.pipe(this.output); // Ends at EIO: every holder closed it.

  }

  /** The program exited: send the end mark after its output. */
  exited(): void {
    if (!this.hold || this.watching) return;
    this.watching = true;
    this.hold.write(this.mark);
  }

  private scan(chunk: Buffer): Buffer {
    if (!this.watching) return chunk;
    const data = Buffer.concat([this.tail, chunk]);
    const at = data.indexOf(this.mark);
    if (at >= 0) {
      this.finish();
      return data.subarray(0, at);
    }
    const keep = Math.min(data.length, this.mark.length - 1);
    this.tail = Buffer.from(data.subarray(data.length - keep));
    return data.subarray(0, data.length - keep);
  }

  private finish(): void {
    this.tail = Buffer.alloc(0);
    this.hold?.destroy();
    this.hold = undefined;
    queueMicrotask(() => {
      this.master.output.unpipe(this.output);
      this.master.close();
      this.output.end();
    });
  }
}

/** `SIGTERM` for 15, and so on (what Node's ChildProcess reports). */
function signalName(signal: number): NodeJS.Signals | null {
  for (const [name, n] of Object.entries(constants.signals)) if (n === signal) return name as NodeJS.Signals;
  return null;
}
