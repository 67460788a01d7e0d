/**
 * `sandbox.pty`: terminals (E2B's shape). A terminal is a process started on a pseudo-terminal with a
 * size; its handle is a {@link CommandHandle} (wait, kill, disconnect, re-attach across a pause) that
 * also types ({@link PtyHandle.sendInput}) and resizes. Output is bytes: a terminal merges stdout and
 * stderr, and escape sequences are the program's, so nothing is decoded.
 */
import { ROUTES } from '@ramify/contracts/client';
import type { PtyInfo, PtyRequest, PtySize } from '@ramify/contracts';
import type { ApiClient } from '../http.js';
import { ConnectionError, NotFoundError, type RamifyError } from '../errors.js';
import { CommandHandle, type CommandHandleInit } from './handle.js';
import { OutputSink } from './output.js';
import { ProcessRoutes } from './process-routes.js';
import { openStreamSocket, startOnStream } from './stream-socket.js';

export type { PtySize } from '@ramify/contracts';

/** Options of {@link Pty.create}. */
export interface PtyCreateOpts {
  /** Columns, 1..1000; default 80. */
  cols?: number;
  /** Rows, 1..1000; default 24. */
  rows?: number;
  /** Every byte the terminal writes, in order (do not keep a reference past the call without copying). */
  onData: (data: Uint8Array) => void;
  /** Working directory; must exist (else `CWD_NOT_FOUND`). Default `/root`. */
  cwd?: string;
  /** Extra environment variables, over `TERM=xterm-256color`, `LANG=C.UTF-8` and the sandbox's. */
  envs?: Record<string, string>;
  /** Run as this user. */
  user?: string;
  /** Kill the terminal's process tree after this many ms; default 0, none. */
  timeoutMs?: number;
  /** What to run; default a login shell, `/bin/bash -i -l`. */
  cmd?: string;
}

/** Options of {@link Pty.connect}. */
export interface PtyConnectOpts {
  /** Every byte, replayed from `fromByte` (default: what the sandbox still holds) and then live; none: output is only kept for `wait()`. */
  onData?: (data: Uint8Array) => void;
  /** Replay from this output byte offset; default 0 (the sandbox keeps the last 8 MiB). */
  fromByte?: number;
}

/** A live terminal: a {@link CommandHandle} that also takes keystrokes and resizes. */
export class PtyHandle extends CommandHandle {
  /** @internal Use `sandbox.pty.create` / `connect`. */
  constructor(init: CommandHandleInit, private readonly ptyRoutes: ProcessRoutes) {
    super(init);
  }

  /**
   * Type into the terminal (a string is sent as UTF-8; `\r` is Enter, `\x03` Ctrl-C, `\x04` Ctrl-D).
   * Ordered with other input. Throws `PROCESS_EXITED` once it has exited.
   */
  sendInput(data: string | Uint8Array): Promise<void> {
    return this.sendStdin(data);
  }

  /** Resize the terminal; its program gets SIGWINCH. Throws `PTY_SIZE_INVALID` (each side 1..1000), `PROCESS_EXITED`. */
  resize(size: PtySize): Promise<void> {
    return this.ptyRoutes.resize(this.pid, size);
  }
}

/** Terminals of one sandbox (`sandbox.pty`). */
export class Pty {
  private readonly routes: ProcessRoutes;

  /** @internal Use `sandbox.pty`. */
  constructor(private readonly api: ApiClient, private readonly sandboxId: string) {
    this.routes = new ProcessRoutes(api, sandboxId);
  }

  /** @internal Every live handle of this sandbox's processes stops following; their waits reject with `err`. */
  abandonHandles(err: RamifyError): void {
    this.routes.abandonHandles(err);
  }

  /**
   * Start a terminal (default 80x24 running `/bin/bash -i -l`) and follow its output. Resolves once it
   * started. Throws `PTY_SIZE_INVALID`, `SandboxNotFoundError` (also a killed sandbox), `INVALID_STATE`
   * (paused), `CWD_NOT_FOUND`, `ConnectionError`.
   */
  async create(opts: PtyCreateOpts): Promise<PtyHandle> {
    const request: PtyRequest = {
      ...(opts.cols !== undefined ? { cols: opts.cols } : {}),
      ...(opts.rows !== undefined ? { rows: opts.rows } : {}),
      ...(opts.cmd !== undefined ? { cmd: opts.cmd } : {}),
      ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
      ...(opts.envs !== undefined ? { envs: opts.envs } : {}),
      ...(opts.user !== undefined ? { user: opts.user } : {}),
      ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    };
    const sink = new OutputSink({ onStdoutBytes: opts.onData });
    const { socket, started, first } = await startOnStream(this.api, this.api.at(ROUTES.streamPty, { id: this.sandboxId }), { type: 'startPty', request }, sink);
    if ('end' in first) {
      if (first.end.kind === 'error') throw first.end.error;
      // A terminal that exits at once still sends `started` before its exit; a close without either is a drop.
      const pid = await Promise.race([started, socket.closed.then(() => -1)]);
      if (pid < 0) throw new ConnectionError(`terminal stream closed before the terminal started; API ${this.api.config.apiUrl}`);
      return new PtyHandle({ pid, routes: this.routes, sink, socket }, this.routes);
    }
    return new PtyHandle({ pid: first.pid, routes: this.routes, sink, socket }, this.routes);
  }

  /**
   * Re-attach to a terminal (running, or exited and still remembered): replays its output from
   * `opts.fromByte`, then follows it live. Throws `PROCESS_NOT_FOUND`.
   */
  async connect(pid: number, opts: PtyConnectOpts = {}): Promise<PtyHandle> {
    const from = { stdout: opts.fromByte ?? 0, stderr: 0 };
    const sink = new OutputSink({ onStdoutBytes: opts.onData }, from);
    let onReady!: () => void;
    const ready = new Promise<void>((resolve) => { onReady = resolve; });
    const socket = await openStreamSocket(this.api, this.routes.stream(pid), from, {
      onData: (channel, bytes) => { sink.push(channel, bytes); onReady(); },
      onStarted: () => onReady(),
    });
    const end = await Promise.race([ready.then(() => undefined), socket.ended]);
    if (end?.kind === 'error') throw end.error;
    return new PtyHandle({ pid, routes: this.routes, sink, socket }, this.routes);
  }

  /** Type into terminal `pid`. Throws `PROCESS_NOT_FOUND`, `PROCESS_EXITED`. */
  sendInput(pid: number, data: string | Uint8Array): Promise<void> {
    return this.routes.sendStdin(pid, data);
  }

  /** Resize terminal `pid`. Throws `PTY_SIZE_INVALID`, `PROCESS_NOT_FOUND`, `NOT_A_PTY`, `PROCESS_EXITED`. */
  resize(pid: number, size: PtySize): Promise<void> {
    return this.routes.resize(pid, size);
  }

  /** SIGKILL the terminal's process group. Resolves false if there is no such process. */
  async kill(pid: number): Promise<boolean> {
    try {
      await this.routes.signal(pid, 'SIGKILL');
      return true;
    } catch (err) {
      if (err instanceof NotFoundError && err.code === 'PROCESS_NOT_FOUND') return false;
      throw err;
    }
  }

  /** Start a terminal in the background (no output followed); attach later with {@link connect}. */
  createDetached(request: PtyRequest): Promise<PtyInfo> {
    return this.api.at(ROUTES.createPty, { id: this.sandboxId }).json<PtyInfo>({ json: request });
  }
}
