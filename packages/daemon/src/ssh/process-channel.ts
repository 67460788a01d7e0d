/**
 * One SSH channel bridged to one process in a sandbox, through core's command and terminal use-cases:
 * the channel's data is the process's stdin (in order, batched while a write is in flight, the channel
 * paused while much is queued), its EOF closes stdin (a terminal has none to close: it gets what the
 * user types, Ctrl-D included); the process's stdout is the channel's data and its stderr the channel's
 * extended data (a terminal merges both); the exit becomes `exit-status` (or `exit-signal`) once all
 * output is flushed, then EOF and close. A channel closed first hangs the process up (SIGHUP), as sshd
 * does. Output has no backpressure towards the agent: a slow client's share waits in the daemon.
 */
import { constants } from 'node:os';
import type { Writable } from 'node:stream';
import type { AgentExit, PtySize } from '@ramify/contracts';
import { closeStdin, resizePty, sendStdin, signalProcess, startCommand, startPty, type Core, type StreamHandlers, type StreamSubscription } from '@ramify/core';
import type { ServerChannel } from 'ssh2';

/** Queued stdin bytes above which the channel is paused (the client's window then closes). */
const STDIN_HIGH_WATER = 4 << 20;
/** Largest stdin write sent to the agent at once. */
const STDIN_BATCH_MAX = 1 << 20;
/** Signals `exit-signal` can name (RFC 4254 §6.10); others are reported as exit status 128 + n. */
const SSH_SIGNALS = new Set(['ABRT', 'ALRM', 'FPE', 'HUP', 'ILL', 'INT', 'KILL', 'PIPE', 'QUIT', 'SEGV', 'TERM', 'USR1', 'USR2']);

/** What to start. */
export type ProcessSpec =
  | { kind: 'command'; cmd: string; envs: Record<string, string> }
  /** `cmd` absent: the login shell. */
  | { kind: 'terminal'; cmd?: string; envs: Record<string, string>; size: PtySize };

/** What happens to the process's stderr and exit. */
export interface ChannelRoles {
  /** `channel`: extended data; `drop`: not shown to the client (a relay's diagnostics). */
  stderr: 'channel' | 'drop';
  /** `send`: exit-status/exit-signal (session channels); `none`: just EOF and close. */
  exit: 'send' | 'none';
}

/** A running bridge: resize and signal its process. */
export interface ProcessBridge {
  readonly pid: number;
  resize(size: PtySize): void;
  signal(name: string): void;
}

/**
 * Start `spec` in `sandboxId` and bridge it to `channel` until the process exits or the channel closes.
 * @throws RamifyError as core's `startCommand` / `startPty` (nothing is started then; the caller tells the client).
 */
export async function bridgeProcess(core: Core, sandboxId: string, channel: ServerChannel, spec: ProcessSpec, roles: ChannelRoles): Promise<ProcessBridge> {
  // Writes after the client went away are dropped, never thrown (an error event would be unhandled).
  channel.on('error', () => undefined);
  channel.stderr.on('error', () => undefined);
  let closed = false;
  channel.once('close', () => (closed = true));
  let finished = false;
  let subscription: StreamSubscription | undefined;
  const finish = async (exit: AgentExit | { message: string }): Promise<void> => {
    if (finished) return;
    finished = true;
    subscription?.detach();
    if ('message' in exit && roles.stderr === 'channel') {
      // On a terminal the client's tty is raw: a bare \n would not return to the start of a line.
      const note = spec.kind === 'terminal' ? `\r\nramify: ${exit.message}\r\n` : `ramify: ${exit.message}\n`;
      writeTo(channel.stderr, Buffer.from(note));
    }
    if (!closed) await Promise.all([flushed(channel, channel), roles.stderr === 'channel' ? flushed(channel, channel.stderr) : undefined]);
    if (roles.exit === 'send') sendExit(channel, exit);
    if (channel.writable) channel.end();
  };
  const handlers: StreamHandlers = {
    onStdout: (chunk) => finished || writeTo(channel, chunk),
    onStderr: (chunk) => finished || roles.stderr === 'drop' || writeTo(channel.stderr, chunk),
    onExit: (exit) => void finish(exit),
    onDisconnect: (reason) => void whyLost(core, sandboxId, reason).then((message) => finish({ message })),
  };
  const started = spec.kind === 'command'
    ? await startCommand(core, sandboxId, { cmd: spec.cmd, envs: spec.envs, stdin: true, timeoutMs: 0 }, handlers)
    : await startPty(core, sandboxId, { ...(spec.cmd !== undefined ? { cmd: spec.cmd } : {}), envs: spec.envs, cols: spec.size.cols, rows: spec.size.rows, timeoutMs: 0 }, handlers);
  subscription = started;
  if (finished) started.detach(); // it exited (or the agent went) while starting
  const { pid } = started;
  const hangUp = (): void => {
    if (finished) return;
    finished = true;
    subscription?.detach();
    signalProcess(core, sandboxId, pid, 'SIGHUP').catch(() => undefined);
  };

  const stdin = new StdinPump(channel, (data) => sendStdin(core, sandboxId, pid, data), spec.kind === 'command' ? () => closeStdin(core, sandboxId, pid) : null);
  channel.on('data', (chunk: Buffer) => stdin.push(chunk));
  channel.on('end', () => stdin.end());
  channel.on('close', hangUp);
  if (closed) hangUp(); // the client left while it started
  return {
    pid,
    resize: (size) => void resizePty(core, sandboxId, pid, size).catch(() => undefined),
    signal: (name) => void signalProcess(core, sandboxId, pid, `SIG${name.replace(/^SIG/, '')}` as NodeJS.Signals).catch(() => undefined),
  };
}

/** What to tell the client when the agent's channel closed under its process. */
async function whyLost(core: Core, sandboxId: string, reason: string): Promise<string> {
  const state = (await core.store.getSandbox(sandboxId).catch(() => null))?.state;
  if (state === 'pausing' || state === 'paused') return 'the sandbox was paused; its processes are kept in it (connecting again resumes it)';
  if (state === 'killing' || state === 'killed') return 'the sandbox was killed';
  return `the connection to the sandbox's agent was lost (${reason})`;
}

/** Write `chunk` unless the stream has ended (the client went away). */
function writeTo(stream: Writable, chunk: Uint8Array): void {
  if (stream.writable) stream.write(chunk);
}

/** Resolves once what was written to `stream` so far has gone out, or the channel closed. */
function flushed(channel: ServerChannel, stream: Writable): Promise<void> {
  return new Promise((resolve) => {
    if (!stream.writable) return resolve();
    channel.once('close', () => resolve());
    stream.write(Buffer.alloc(0), () => resolve());
  });
}

/** `exit-status`, or `exit-signal` for a signal SSH can name (else status 128 + its number). */
function sendExit(channel: ServerChannel, exit: AgentExit | { message: string }): void {
  if ('message' in exit) return channel.exit(255);
  const signal = exit.signal?.replace(/^SIG/, '');
  if (signal && SSH_SIGNALS.has(signal)) return channel.exit(signal, false, '');
  if (exit.signal) return channel.exit(128 + (constants.signals[exit.signal as NodeJS.Signals] ?? 0));
  channel.exit(exit.exitCode ?? 255);
}

/**
 * A channel's data to a process's stdin, in order: one write in flight at a time, everything that came
 * meanwhile sent next as one batch; the channel paused above {@link STDIN_HIGH_WATER} queued bytes.
 * EOF (`end`) closes stdin once everything before it was written.
 */
class StdinPump {
  readonly #queue: Buffer[] = [];
  #queued = 0;
  #sending = false;
  #ending = false;
  #broken = false;

  constructor(
    private readonly channel: ServerChannel,
    private readonly send: (data: Uint8Array) => Promise<void>,
    private readonly close: (() => Promise<void>) | null,
  ) {}

  push(chunk: Buffer): void {
    if (this.#broken) return;
    this.#queue.push(chunk);
    this.#queued += chunk.length;
    if (this.#queued > STDIN_HIGH_WATER) this.channel.pause();
    void this.#pump();
  }

  end(): void {
    this.#ending = true;
    void this.#pump();
  }

  async #pump(): Promise<void> {
    if (this.#sending) return;
    this.#sending = true;
    try {
      while (this.#queue.length > 0 && !this.#broken) {
        const batch = this.#take();
        this.channel.resume();
        // A process that exited or closed its stdin takes no more: the rest is dropped (its exit follows).
        await this.send(batch).catch(() => (this.#broken = true));
      }
      if (this.#ending && this.close && !this.#broken) {
        this.#broken = true;
        await this.close().catch(() => undefined);
      }
    } finally {
      this.#sending = false;
    }
  }

  /** Up to {@link STDIN_BATCH_MAX} bytes from the queue's head (whole chunks, or the first chunk alone). */
  #take(): Buffer {
    let n = 0;
    let bytes = 0;
    while (n < this.#queue.length && (n === 0 || bytes + this.#queue[n]!.length <= STDIN_BATCH_MAX)) bytes += this.#queue[n++]!.length;
    const parts = this.#queue.splice(0, n);
    this.#queued -= bytes;
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts, bytes);
  }
}
