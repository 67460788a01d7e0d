/**
 * {@link CommandHandle}: a live view of one process. It follows the process's output stream and, when
 * the WebSocket drops before the exit frame, re-attaches to `/processes/:pid/stream` from the byte
 * offsets it has already received, so no output is lost or repeated.
 */
import type { CommandResult } from '@ramify/contracts';
import { CommandExitError, ConnectionError, NotFoundError, RamifyError, SandboxFailedError } from '../errors.js';
import type { OutputSink } from './output.js';
import type { ProcessRoutes } from './process-routes.js';
import { openStreamSocket, type StreamExit, type StreamSocket } from './stream-socket.js';

/** Reconnect attempts in a row (without receiving anything) before giving up on a dropped stream. */
export const MAX_STREAM_RECONNECTS = 6;
const backoffMs = (attempt: number): number => Math.min(2000, 100 * 2 ** attempt);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** How often a handle checks whether its paused sandbox runs again, ms. */
export const PAUSED_POLL_MS = 1000;
/** Sandbox states after which a process's stream comes back (the handle waits, then re-attaches). */
const WAIT_STATES: ReadonlySet<string> = new Set(['pausing', 'paused', 'resuming']);

/** True when a result is a clean exit (code 0, no signal, no deadline). */
export function isSuccess(result: CommandResult): boolean {
  return result.exitCode === 0 && result.signal === null && result.error === null;
}

type FollowOutcome = { kind: 'exit'; exit: StreamExit } | { kind: 'disconnected' };

/** Internal construction parameters of a {@link CommandHandle}. */
export interface CommandHandleInit {
  pid: number;
  routes: ProcessRoutes;
  sink: OutputSink;
  /** The already-open socket carrying this process's output. */
  socket: StreamSocket;
}

/**
 * A running (or finished) process in a sandbox. Returned by `commands.run(cmd, { background: true })`
 * and `commands.connect(pid)`. Output keeps flowing to the callbacks given at start until the process
 * exits or {@link disconnect} is called. If the WebSocket drops, the handle re-attaches from the byte
 * offsets it has received (nothing lost or repeated); if the sandbox is paused meanwhile, the handle
 * waits until it is resumed (its processes are checkpointed with it) and then re-attaches.
 */
export class CommandHandle {
  /** Process id inside the sandbox. */
  readonly pid: number;
  private readonly routes: ProcessRoutes;
  private readonly sink: OutputSink;
  private socket: StreamSocket;
  private disconnected = false;
  /** Set by {@link abandon}: following stops and waits reject with it. */
  private abandonedWith: RamifyError | undefined;
  private exit: StreamExit | undefined;
  private readonly followed: Promise<FollowOutcome>;
  private result: Promise<CommandResult> | undefined;
  private stdinQueue: Promise<void> = Promise.resolve();
  private failures = 0;

  /** @internal Use `sandbox.commands.run` / `connect`. */
  constructor(init: CommandHandleInit) {
    this.pid = init.pid;
    this.routes = init.routes;
    this.sink = init.sink;
    this.socket = init.socket;
    this.followed = this.follow();
    this.followed.catch(() => undefined);
    this.routes.handles.add(this);
    void this.followed.finally(() => this.routes.handles.delete(this)).catch(() => undefined);
  }

  /** Stdout received so far (decoded), at most the daemon's `maxOutputBytes` of it (the head; callbacks get every byte). */
  get stdout(): string { return this.sink.stdout; }
  /** Stderr received so far (decoded), at most the daemon's `maxOutputBytes` of it. */
  get stderr(): string { return this.sink.stderr; }
  /** Exit code once the process has exited (and its output arrived); `null` before, or if killed by a signal. */
  get exitCode(): number | null { return this.exit?.exitCode ?? null; }
  /** True once the process's exit arrived on this handle's stream (all its output before it); never true after {@link disconnect} alone. */
  get exited(): boolean { return this.exit !== undefined; }

  /**
   * Wait for the process to exit. Resolves with the {@link CommandResult} (all output received) on exit
   * code 0; throws {@link CommandExitError} (carrying the result) on a non-zero exit, a signal or a
   * deadline kill. After {@link disconnect}, the exit status comes from a long poll and the output is
   * what arrived before disconnecting. Rejects with the API's error if the stream cannot be resumed.
   */
  wait(): Promise<CommandResult> {
    this.result ??= this.collect();
    return this.result.then((result) => {
      if (this.sink.callbackError !== undefined) throw this.sink.callbackError;
      if (!isSuccess(result)) throw new CommandExitError(result);
      return result;
    });
  }

  /** SIGKILL the process group. Resolves false if the process no longer exists. */
  async kill(): Promise<boolean> {
    try {
      await this.routes.signal(this.pid, 'SIGKILL');
      return true;
    } catch (err) {
      if (err instanceof NotFoundError && err.code === 'PROCESS_NOT_FOUND') return false;
      throw err;
    }
  }

  /**
   * Write to the process's stdin (it must have been started with `stdin: true`). Writes are ordered.
   * Throws `InvalidStateError` `PROCESS_EXITED` once the process has exited (`details.exitCode`), as `commands.sendStdin`.
   */
  sendStdin(data: string | Uint8Array): Promise<void> {
    return this.enqueue(() => this.routes.sendStdin(this.pid, data));
  }

  /** Close the process's stdin (EOF), after every pending {@link sendStdin}. */
  closeStdin(): Promise<void> {
    return this.enqueue(() => this.routes.closeStdin(this.pid));
  }

  /** Stop receiving output; the process keeps running. Re-attach with `commands.connect(pid)`. */
  async disconnect(): Promise<void> {
    this.disconnected = true;
    this.socket.close();
    await this.followed.catch(() => undefined);
  }

  /**
   * @internal Stop following for good (no waiting for a resume, no re-attach): {@link wait} rejects with
   * `err`. `Sandbox.explore` does this to the handles of a fork its budget paused, so a script does not
   * wait for a resume that only a raised budget brings. The process itself is untouched (paused with its
   * sandbox); `commands.connect(pid)` follows it again.
   */
  abandon(err: RamifyError): void {
    if (this.exit !== undefined || this.abandonedWith) return;
    this.abandonedWith = err;
    this.disconnected = true;
    this.socket.close();
  }

  private enqueue(op: () => Promise<void>): Promise<void> {
    const next = this.stdinQueue.then(op);
    this.stdinQueue = next.catch(() => undefined);
    return next;
  }

  private async collect(): Promise<CommandResult> {
    const outcome = await this.followed;
    const exit = outcome.kind === 'exit' ? outcome.exit : await this.routes.wait(this.pid);
    return { pid: this.pid, exitCode: exit.exitCode, signal: exit.signal, error: exit.error, ...this.sink.result() };
  }

  private received(): number {
    return this.sink.offsets.stdout + this.sink.offsets.stderr;
  }

  /**
   * Follow the stream to the exit frame. When it drops (network, or the daemon closing it because the
   * sandbox is being paused), re-attach from the received offsets; while the sandbox is paused, wait
   * for it to run again.
   */
  private async follow(): Promise<FollowOutcome> {
    for (;;) {
      const receivedBefore = this.received();
      const end = await this.socket.ended;
      if (end.kind === 'exit') {
        this.sink.finish();
        this.exit = end.exit;
        return end;
      }
      if (this.abandonedWith) throw this.abandonedWith;
      if (this.disconnected) return { kind: 'disconnected' };
      // Progress since the last (re)connect resets the count of failures in a row.
      if (this.received() > receivedBefore) this.failures = 0;
      if (end.kind === 'error') await this.waitWhilePaused(end.error);
      this.socket = await this.reattach(end.kind === 'error' ? end.error.message : end.reason);
    }
  }

  /**
   * After a refused re-attach: wait while the sandbox is pausing, paused or resuming (polling its state)
   * and return once it runs; throw `SandboxFailedError` when it failed (`error`), rethrow `err` for
   * anything else (killed, gone, process unknown).
   */
  private async waitWhilePaused(err: RamifyError): Promise<void> {
    if (err.code !== 'INVALID_STATE' && err.code !== 'AGENT_UNREACHABLE') throw err;
    for (;;) {
      const { state, error } = await this.routes.sandboxState().catch(() => { throw err; });
      if (state === 'error') {
        throw new SandboxFailedError(`sandbox '${this.routes.sandboxId}' failed: ${error ?? 'no reason recorded'}`, { id: this.routes.sandboxId, reason: error, pid: this.pid });
      }
      if (state === 'running') return;
      if (!WAIT_STATES.has(state)) throw err;
      if (this.abandonedWith) throw this.abandonedWith;
      if (this.disconnected) return;
      await sleep(PAUSED_POLL_MS);
    }
  }

  private async reattach(firstReason: string): Promise<StreamSocket> {
    let reason = firstReason;
    for (;;) {
      if (this.failures >= MAX_STREAM_RECONNECTS) {
        throw new ConnectionError(`output stream of process ${this.pid} dropped ${this.failures} times in a row (last: ${reason}); API ${this.routes.api.config.apiUrl}`,
          { pid: this.pid, offsets: { ...this.sink.offsets } });
      }
      await sleep(backoffMs(this.failures));
      this.failures += 1;
      if (this.abandonedWith) throw this.abandonedWith;
      if (this.disconnected) return this.socket;
      try {
        return await openStreamSocket(this.routes.api, this.routes.stream(this.pid),
          { stdout: this.sink.offsets.stdout, stderr: this.sink.offsets.stderr },
          { onData: (channel, bytes) => this.sink.push(channel, bytes) });
      } catch (err) {
        // The API being briefly unreachable is worth retrying; a paused sandbox is waited for; an
        // answer like PROCESS_NOT_FOUND ends the handle.
        if (!(err instanceof RamifyError)) throw err;
        if (err.code !== 'API_UNREACHABLE' && err.code !== 'REQUEST_TIMEOUT') await this.waitWhilePaused(err);
        reason = err.message;
      }
    }
  }
}
