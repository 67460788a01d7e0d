/**
 * The local end of an interactive session (`ramify sandbox shell`): the user's terminal switched to raw
 * mode (every keystroke, Ctrl-C and Ctrl-D included, arrives as bytes and nothing is echoed locally),
 * its size and resizes, and the way back to the mode it had. {@link LocalTerminal.restore} is idempotent
 * and also runs from a process `exit` listener, so no exit path leaves the terminal raw.
 */
import { RamifyError } from '@ramify/sdk';

/** A terminal size in character cells. */
export interface TerminalSize {
  cols: number;
  rows: number;
}

/** The size sent when no local stream can tell one (the PTY API's own default). */
export const DEFAULT_TERMINAL_SIZE: TerminalSize = { cols: 80, rows: 24 };
/** The PTY API's bound on each side, cells (`PTY_SIZE_INVALID` past it). */
export const MAX_TERMINAL_SIDE = 1000;

/** What of `process.stdin` a terminal session uses (a `tty.ReadStream` when it is a terminal). */
export interface TerminalInput extends NodeJS.ReadableStream {
  isTTY?: boolean;
  setRawMode?: (mode: boolean) => unknown;
}

/** What of `process.stdout` / `process.stderr` a terminal session uses (a `tty.WriteStream` when a terminal). */
export interface TerminalOutput extends NodeJS.WritableStream {
  isTTY?: boolean;
  columns?: number;
  rows?: number;
}

/** Stdin is not a terminal (`VALIDATION_FAILED`): an interactive session has no keyboard to take. */
export class NotATerminalError extends RamifyError {
  constructor() {
    super('VALIDATION_FAILED', "stdin is not a terminal: 'ramify sandbox shell' needs one (for scripts: 'ramify sandbox exec ID -- CMD', with -i to pipe stdin to it)", { stdin: 'not a terminal' });
    this.name = 'NotATerminalError';
  }
}

const clampSide = (n: number | undefined, fallback: number): number =>
  n === undefined || !Number.isFinite(n) || n < 1 ? fallback : Math.min(Math.floor(n), MAX_TERMINAL_SIDE);

/** See the module comment. Construct with {@link LocalTerminal.open}. */
export class LocalTerminal {
  private raw = false;
  private lastByte: number | undefined;
  private readonly restoreAtExit = (): void => this.restore();
  private readonly reenterRaw = (): void => {
    // Back from a stop (SIGSTOP, then SIGCONT): whoever had the terminal meanwhile may have reset its mode.
    if (this.raw) this.input.setRawMode?.(true);
  };

  private constructor(private readonly input: TerminalInput, private readonly output: TerminalOutput, private readonly sizeSource: TerminalOutput | undefined) {}

  /**
   * Take the process's terminal. `stdin` must be a terminal; the size (and its changes) comes from the
   * first of `sizeFrom` that is one (stdout, then stderr: either may be redirected), else 80x24.
   * @throws NotATerminalError (`VALIDATION_FAILED`) when `stdin` is not a terminal (nothing is changed then).
   */
  static open(stdin: TerminalInput, stdout: TerminalOutput, sizeFrom: TerminalOutput[]): LocalTerminal {
    if (stdin.isTTY !== true || typeof stdin.setRawMode !== 'function') throw new NotATerminalError();
    return new LocalTerminal(stdin, stdout, sizeFrom.find((s) => s.isTTY === true));
  }

  /** The local size, each side within 1..{@link MAX_TERMINAL_SIDE}; 80x24 when no output is a terminal. */
  size(): TerminalSize {
    return {
      cols: clampSide(this.sizeSource?.columns, DEFAULT_TERMINAL_SIZE.cols),
      rows: clampSide(this.sizeSource?.rows, DEFAULT_TERMINAL_SIZE.rows),
    };
  }

  /**
   * Switch to raw mode. Undone by {@link restore} (also at process exit). Input is read from the first
   * {@link onInput} on; what is typed before waits in the terminal (not echoed: raw mode is on).
   */
  enterRaw(): void {
    if (this.raw) return;
    this.input.setRawMode?.(true);
    this.raw = true;
    process.on('exit', this.restoreAtExit);
    process.on('SIGCONT', this.reenterRaw);
  }

  /** Put the terminal back in the mode it had and stop reading input, so the process can end. Idempotent. */
  restore(): void {
    if (!this.raw) return;
    this.raw = false;
    process.off('exit', this.restoreAtExit);
    process.off('SIGCONT', this.reenterRaw);
    try {
      this.input.setRawMode?.(false);
    } catch {
      // The terminal is gone (its window closed: EIO); there is nothing left to restore.
    }
    this.input.pause();
  }

  /** Call `fn` with every chunk of input (keystrokes, pastes) as bytes. Returns the unsubscribe function. */
  onInput(fn: (bytes: Uint8Array) => void): () => void {
    const listener = (chunk: Buffer | string): void => fn(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
    this.input.on('data', listener);
    this.input.resume();
    return () => void this.input.off('data', listener);
  }

  /** Call `fn` with the new size on every local resize (SIGWINCH). Returns the unsubscribe function. */
  onResize(fn: (size: TerminalSize) => void): () => void {
    const source = this.sizeSource;
    if (!source) return () => undefined;
    const listener = (): void => fn(this.size());
    source.on('resize', listener);
    return () => void source.off('resize', listener);
  }

  /**
   * Call `fn` once when the terminal goes away under the session: its output fails (EIO, EPIPE: the
   * window was closed) or its input ends. Returns the unsubscribe function.
   */
  onGone(fn: () => void): () => void {
    let called = false;
    const once = (): void => {
      if (called) return;
      called = true;
      fn();
    };
    this.output.on('error', once);
    this.input.on('error', once);
    this.input.on('end', once);
    return () => {
      this.output.off('error', once);
      this.input.off('error', once);
      this.input.off('end', once);
    };
  }

  /** Write the remote terminal's output as it is (escape sequences included). */
  write(bytes: Uint8Array): void {
    // Copied: the caller's buffer may be reused once the callback returns, while a write may be queued.
    if (bytes.byteLength === 0) return;
    this.lastByte = bytes[bytes.byteLength - 1];
    this.output.write(Buffer.from(bytes));
  }

  /** True unless the remote output so far ended mid-line (then a note should start on a fresh line). */
  get atLineStart(): boolean {
    return this.lastByte === undefined || this.lastByte === 0x0a;
  }

  /** A note for the user while raw mode is on (stderr; raw mode needs `\r\n`, a fresh line first). */
  note(stderr: NodeJS.WritableStream, text: string): void {
    stderr.write(this.raw ? `\r\n${text}\r\n` : `${text}\n`);
  }
}
