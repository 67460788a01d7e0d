/**
 * A program started before it is needed: `nft -f -` costs ~40-60 ms of process start (exec, dynamic
 * linking, libnftables' context) on a loaded 2-core host before it reads a byte, and a warm pool claim
 * waits for one transaction. {@link StandbyProcess} keeps one child of `argv` started and blocked on its
 * stdin; {@link StandbyProcess.run} hands it the input (it then does what a fresh one would: nft reads the
 * kernel's state only after its input) and starts the next one once the program has been idle
 * {@link NEXT_START_DELAY_MS}: starting a child blocks the daemon's event loop while Node forks (5-27 ms,
 * growing with the daemon's memory), which must not land inside the operation that used the last one.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { RamifyError } from '@ramify/contracts';
import { run, type RunOptions, type RunResult } from './exec.js';

/**
 * How long after a run the next child is started, ms: past the rest of the operation that ran it (a claim
 * answers ~10-20 ms after its transaction); a run sooner than that starts a fresh child, as without a standby.
 */
export const NEXT_START_DELAY_MS = 200;

interface Waiting {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  /** Set once it exited or failed to start: it is not used then. */
  gone: boolean;
  closed: Promise<number>;
}

export class StandbyProcess {
  readonly #argv: readonly string[];
  readonly #options: RunOptions;
  #waiting: Waiting | null = null;
  #stopped = false;
  #nextStart: NodeJS.Timeout | null = null;

  /** `argv` reads its whole input from stdin (e.g. `['nft', '-f', '-']`); nothing is started before the first run or {@link prepare}. */
  constructor(argv: readonly string[], options: RunOptions = {}) {
    this.#argv = argv;
    this.#options = options;
  }

  /**
   * Run the program with `input` on stdin: the child started ahead when there is one still waiting, else a
   * fresh one. Resolves with its output and exit code (never rejects on a non-zero exit).
   * @throws RamifyError `RUNTIME_UNAVAILABLE` when the program cannot be started.
   */
  async run(input: string): Promise<RunResult> {
    const waiting = this.#take();
    if (this.#nextStart) clearTimeout(this.#nextStart);
    this.#nextStart = null;
    try {
      return await this.#runOn(waiting, input);
    } finally {
      this.#scheduleNext();
    }
  }

  async #runOn(waiting: Waiting | null, input: string): Promise<RunResult> {
    if (!waiting) return run([...this.#argv], input, this.#options);
    // In use now: it keeps the process alive until it is done, as a fresh child would.
    waiting.child.ref();
    for (const stream of [waiting.child.stdout, waiting.child.stderr]) (stream as unknown as { ref?: () => void } | null)?.ref?.();
    waiting.child.stdin!.end(input);
    const code = await waiting.closed.catch(() => -1);
    // Killed while it waited (no word from it): the input was not applied; a fresh process runs it.
    if (code !== 0 && waiting.stderr === '' && waiting.stdout === '') return run([...this.#argv], input, this.#options);
    return { stdout: waiting.stdout, stderr: waiting.stderr, code };
  }

  /**
   * Have a child waiting before the first run ({@link NEXT_START_DELAY_MS} from now, unless one waits
   * already): the first transaction of a freshly started daemon (a sandbox resumed there from another
   * host, the first claim) would otherwise pay a fresh child's start.
   */
  prepare(): void {
    this.#scheduleNext();
  }

  /** End the waiting child (its stdin closes on no input: it exits having done nothing); none is started again. */
  stop(): void {
    this.#stopped = true;
    if (this.#nextStart) clearTimeout(this.#nextStart);
    this.#nextStart = null;
    const waiting = this.#take();
    waiting?.child.stdin!.end();
  }

  #take(): Waiting | null {
    const waiting = this.#waiting;
    this.#waiting = null;
    return waiting && !waiting.gone ? waiting : null;
  }

  /** Start the next child {@link NEXT_START_DELAY_MS} from now, unless one waits or another run comes first. */
  #scheduleNext(): void {
    if (this.#stopped || this.#waiting || this.#nextStart) return;
    this.#nextStart = setTimeout(() => {
      this.#nextStart = null;
      if (!this.#waiting) this.#startNext();
    }, NEXT_START_DELAY_MS);
    // It must not keep the daemon's process alive on its own.
    this.#nextStart.unref();
  }

  #startNext(): void {
    if (this.#stopped) return;
    const [cmd, ...args] = this.#argv;
    const child = spawn(cmd!, args, { stdio: ['pipe', 'pipe', 'pipe'], ...(this.#options.env ? { env: this.#options.env } : {}) });
    const waiting: Waiting = { child, stdout: '', stderr: '', gone: false, closed: Promise.resolve(-1) };
    waiting.closed = new Promise<number>((resolve, reject) => {
      child.on('error', (err) => {
        waiting.gone = true;
        reject(new RamifyError('RUNTIME_UNAVAILABLE', `cannot run ${cmd}: ${err.message}`));
      });
      child.on('close', (code) => {
        waiting.gone = true;
        resolve(code ?? -1);
      });
    });
    // A child that fails before it is used is simply not used (run() starts a fresh one and reports).
    waiting.closed.catch(() => undefined);
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (waiting.stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (waiting.stderr += d));
    child.stdin!.on('error', () => undefined);
    // It must not keep the daemon's process alive on its own.
    child.unref();
    for (const stream of [child.stdin, child.stdout, child.stderr]) (stream as unknown as { unref?: () => void } | null)?.unref?.();
    this.#waiting = waiting;
  }
}
