/**
 * Scripted processes of the protocol fixture. A "process" here is a test-supplied async function that
 * emits bytes; nothing is executed. It exists so client tests can exercise the output framing,
 * offsets, replay and reconnect logic against a server that follows the contract.
 */
import { RamifyError, type CommandRequest, type ProcessInfo } from '@ramify/contracts';

/** Exit status a script ends with. */
export interface ScriptExit {
  exitCode?: number | null;
  signal?: string | null;
  error?: string | null;
}

/** What a {@link CommandScript} can do. */
export interface ScriptContext {
  request: CommandRequest;
  sandboxId: string;
  pid: number;
  /** Emit bytes on stdout; each call is one frame to live subscribers. */
  stdout(data: string | Uint8Array): void;
  stderr(data: string | Uint8Array): void;
  /** Stdin chunks as they arrive; ends when stdin is closed. */
  stdin: AsyncIterable<Uint8Array>;
  /** Abruptly close every WebSocket streaming this process, after the frames already sent are flushed. */
  dropStreams(): Promise<void>;
  /** Resolves when the next stream subscription (a re-attach) for this process arrives. */
  nextAttach(): Promise<void>;
  /** Resolves when at least one stream is subscribed (at once if one is). */
  subscribed(): Promise<void>;
  sleep(ms: number): Promise<void>;
  /** Resolves when the process is signalled (SIGKILL etc.); the script should then return. */
  killed: Promise<string>;
}

/** A scripted command; returning a number is the exit code. */
export type CommandScript = (ctx: ScriptContext) => Promise<ScriptExit | number | void>;

/** A live subscriber to one process's output (one WebSocket). */
export interface ProcessSubscriber {
  onData(channel: 'stdout' | 'stderr', bytes: Uint8Array): void;
  onExit(exit: Required<ScriptExit>): void;
  /** Flush pending frames, then close abruptly. */
  drop(): Promise<void>;
  /** The sandbox is pausing. A WebSocket closes with 1001 and no exit frame (as the daemon does) and returns true; an in-server waiter returns false and stays. */
  goAway(): boolean;
}

/** One scripted process and everything it has emitted. */
export class FixtureProcess {
  stdout: Buffer = Buffer.alloc(0);
  stderr: Buffer = Buffer.alloc(0);
  exit: Required<ScriptExit> | undefined;
  readonly subscribers = new Set<ProcessSubscriber>();
  readonly startedAt = new Date().toISOString();
  private stdinQueue: Uint8Array[] = [];
  private stdinClosed: boolean;
  private stdinWake: (() => void) | undefined;
  private attachWaiters: (() => void)[] = [];
  private onKill!: (signal: string) => void;
  readonly killed = new Promise<string>((resolve) => { this.onKill = resolve; });

  constructor(readonly pid: number, readonly sandboxId: string, readonly request: CommandRequest) {
    this.stdinClosed = !request.stdin;
  }

  /** Start running `script`; output goes to the buffers and subscribers. */
  start(script: CommandScript): void {
    const emit = (channel: 'stdout' | 'stderr') => (data: string | Uint8Array): void => {
      if (this.exit) return;
      const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
      this[channel] = Buffer.concat([this[channel], bytes]);
      for (const s of this.subscribers) s.onData(channel, bytes);
    };
    const ctx: ScriptContext = {
      request: this.request, sandboxId: this.sandboxId, pid: this.pid,
      stdout: emit('stdout'), stderr: emit('stderr'),
      stdin: this.stdinIterable(),
      dropStreams: async () => { await Promise.all([...this.subscribers].map((s) => s.drop())); },
      nextAttach: () => new Promise<void>((resolve) => this.attachWaiters.push(resolve)),
      subscribed: () => (this.subscribers.size > 0 ? Promise.resolve() : new Promise<void>((resolve) => this.attachWaiters.push(resolve))),
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      killed: this.killed,
    };
    // Like a real process, the script starts after the caller has had a chance to subscribe.
    void new Promise((resolve) => setImmediate(resolve)).then(() => script(ctx)).then(
      (r) => this.finish(typeof r === 'number' ? { exitCode: r } : r ?? { exitCode: 0 }),
      (err: unknown) => { this.stderr = Buffer.concat([this.stderr, Buffer.from(String(err))]); this.finish({ exitCode: 1 }); },
    );
  }

  /** Add a subscriber: replay from the offsets, then live. */
  subscribe(sub: ProcessSubscriber, from: { stdout: number; stderr: number }): () => void {
    const out = this.stdout.subarray(Math.min(from.stdout, this.stdout.length));
    const err = this.stderr.subarray(Math.min(from.stderr, this.stderr.length));
    if (out.length) sub.onData('stdout', out);
    if (err.length) sub.onData('stderr', err);
    if (this.exit) sub.onExit(this.exit);
    else this.subscribers.add(sub);
    const waiters = this.attachWaiters;
    this.attachWaiters = [];
    for (const w of waiters) w();
    return () => this.subscribers.delete(sub);
  }

  /** The sandbox is pausing: end every stream with 1001 (the process itself lives on). */
  goAway(): void {
    for (const s of [...this.subscribers]) if (s.goAway()) this.subscribers.delete(s);
  }

  /** Queue stdin bytes. @throws RamifyError PROCESS_EXITED once the script ended, INVALID_STATE when stdin is closed (as the daemon). */
  writeStdin(bytes: Uint8Array): void {
    if (this.exit) {
      throw new RamifyError('PROCESS_EXITED', `process ${this.pid} exited with code ${this.exit.exitCode}; its stdin is gone`, { pid: this.pid, exitCode: this.exit.exitCode, signal: this.exit.signal });
    }
    if (this.stdinClosed) throw new RamifyError('INVALID_STATE', `stdin of process ${this.pid} is closed`, { pid: this.pid });
    this.stdinQueue.push(bytes);
    this.stdinWake?.();
  }

  closeStdin(): void {
    this.stdinClosed = true;
    this.stdinWake?.();
  }

  signal(signal: string): void {
    this.onKill(signal);
    this.finish({ exitCode: null, signal });
  }

  info(): ProcessInfo {
    return {
      pid: this.pid, cmd: this.request.cmd, cwd: this.request.cwd ?? '/root', startedAt: this.startedAt,
      running: !this.exit, exitCode: this.exit?.exitCode ?? null, signal: this.exit?.signal ?? null, error: this.exit?.error ?? null,
      stdoutBytes: this.stdout.length, stderrBytes: this.stderr.length,
    };
  }

  private finish(exit: ScriptExit): void {
    if (this.exit) return;
    this.exit = { exitCode: exit.exitCode ?? null, signal: exit.signal ?? null, error: exit.error ?? null };
    for (const s of this.subscribers) s.onExit(this.exit);
    this.subscribers.clear();
    this.closeStdin();
  }

  private async *stdinIterable(): AsyncGenerator<Uint8Array> {
    for (;;) {
      const next = this.stdinQueue.shift();
      if (next) { yield next; continue; }
      if (this.stdinClosed) return;
      await new Promise<void>((resolve) => { this.stdinWake = resolve; });
      this.stdinWake = undefined;
    }
  }
}

/** Scripts every fixture understands: `echo TEXT`, `exit N`, `cat` (stdin to stdout); anything else is 127. */
export function builtinScript(cmd: string): CommandScript {
  const echo = /^echo (.*)$/s.exec(cmd);
  if (echo) return async (ctx) => { ctx.stdout(`${echo[1]}\n`); return 0; };
  const exit = /^exit (\d+)$/.exec(cmd);
  if (exit) return async () => Number(exit[1]);
  if (cmd === 'cat') return async (ctx) => { for await (const c of ctx.stdin) ctx.stdout(c); return 0; };
  return async (ctx) => { ctx.stderr(`bash: ${cmd.split(' ')[0]}: command not found\n`); return 127; };
}
