/**
 * `sandbox.commands`: run commands (streamed over a WebSocket), start background processes, and
 * re-attach to processes started earlier (even before a pause, resume or fork).
 */
import { ROUTES } from '@ramify/contracts/client';
import type { CommandRequest, CommandResult, ProcessInfo, StreamOffsets } from '@ramify/contracts';
import type { ApiClient } from '../http.js';
import { CommandExitError, ConnectionError, NotFoundError, type RamifyError } from '../errors.js';
import { CommandHandle, isSuccess } from './handle.js';
import { OutputSink, type OutputCallbacks } from './output.js';
import { ProcessRoutes } from './process-routes.js';
import { feedStdin, type StdinData } from './stdin-feed.js';
import { openStreamSocket, startOnStream } from './stream-socket.js';

export type { StdinData } from './stdin-feed.js';

/** Options of {@link Commands.run}. */
export interface CommandStartOpts extends OutputCallbacks {
  /** Working directory; must exist (else `CWD_NOT_FOUND`). Default `/root`. */
  cwd?: string;
  /** Extra environment variables, merged over the sandbox's. */
  envs?: Record<string, string>;
  /** Kill the process tree after this many ms; 0 = no deadline. Server default 60000 in the foreground. */
  timeoutMs?: number;
  /**
   * Stdin. Absent/false: closed at once. `true`: kept open for `sendStdin`/`closeStdin`.
   * Data (string, bytes, or an async iterable such as a Node `Readable`): sent, then stdin is closed.
   */
  stdin?: boolean | StdinData;
  /** Run as this user inside the sandbox. */
  user?: string;
  /** Return a {@link CommandHandle} as soon as the process started, instead of waiting for exit. */
  background?: boolean;
}

/** Options of {@link Commands.connect}. */
export interface CommandConnectOpts extends OutputCallbacks {
  /** Replay output from these byte offsets; default from the start (what the sandbox still buffers). */
  from?: StreamOffsets;
}

/** Process control of one sandbox (`sandbox.commands`). */
export class Commands {
  private readonly routes: ProcessRoutes;

  /** @internal Use `sandbox.commands`. */
  constructor(private readonly api: ApiClient, private readonly sandboxId: string) {
    this.routes = new ProcessRoutes(api, sandboxId);
  }

  /** @internal Every live handle of this sandbox's processes stops following; their waits reject with `err`. */
  abandonHandles(err: RamifyError): void {
    this.routes.abandonHandles(err);
  }

  /**
   * Run `cmd` with `/bin/bash -c`. In the foreground (default), output streams to the callbacks (every
   * byte) and the promise resolves with the {@link CommandResult} once the process exited: its `stdout`
   * and `stderr` hold the head of each stream, at most the daemon's `maxOutputBytes` (32 MiB by
   * default), and `truncated` / `capture` say whether and where they were cut. A non-zero exit, a
   * signal or the deadline throws {@link CommandExitError} carrying the result. With
   * `background: true`, resolves with a {@link CommandHandle} as soon as the process started.
   * Throws `SandboxNotFoundError`, `CWD_NOT_FOUND`, `ConnectionError`, ... from the API.
   */
  run(cmd: string, opts?: CommandStartOpts & { background?: false }): Promise<CommandResult>;
  run(cmd: string, opts: CommandStartOpts & { background: true }): Promise<CommandHandle>;
  run(cmd: string, opts?: CommandStartOpts): Promise<CommandResult | CommandHandle>;
  async run(cmd: string, opts: CommandStartOpts = {}): Promise<CommandResult | CommandHandle> {
    const request: CommandRequest = {
      cmd,
      ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
      ...(opts.envs !== undefined ? { envs: opts.envs } : {}),
      ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
      ...(opts.user !== undefined ? { user: opts.user } : {}),
      ...(opts.stdin !== undefined && opts.stdin !== false ? { stdin: true } : {}),
    };
    if (opts.background) {
      const { pid } = await this.api.at(ROUTES.runCommand, { id: this.sandboxId }).json<{ pid: number }>({ json: { ...request, background: true } });
      const handle = await this.attach(pid, opts, { stdout: 0, stderr: 0 });
      this.feedStdin(handle, opts.stdin);
      return handle;
    }
    return this.runForeground(request, opts);
  }

  /**
   * Re-attach to a process (running, or exited and still remembered by the sandbox): replays its output
   * from `opts.from` (default the beginning), then follows it live. Throws `PROCESS_NOT_FOUND`.
   */
  connect(pid: number, opts: CommandConnectOpts = {}): Promise<CommandHandle> {
    return this.attach(pid, opts, opts.from ?? { stdout: 0, stderr: 0 });
  }

  /** Processes the sandbox knows about (running and recently exited), with their output byte counts. */
  list(): Promise<ProcessInfo[]> {
    return this.routes.list();
  }

  /** SIGKILL a process group. Resolves false if there is no such process. */
  async kill(pid: number): Promise<boolean> {
    try {
      await this.routes.signal(pid, 'SIGKILL');
      return true;
    } catch (err) {
      if (err instanceof NotFoundError && err.code === 'PROCESS_NOT_FOUND') return false;
      throw err;
    }
  }

  /**
   * Write to a process's stdin (started with `stdin: true`). Throws `InvalidStateError`: code
   * `PROCESS_EXITED` once the process has exited (`details.exitCode`, `details.signal`), `INVALID_STATE`
   * when it was started without stdin or its stdin is closed; `NotFoundError` `PROCESS_NOT_FOUND`.
   */
  sendStdin(pid: number, data: string | Uint8Array): Promise<void> {
    return this.routes.sendStdin(pid, data);
  }

  /** Close a process's stdin (EOF). Throws as {@link sendStdin}. */
  closeStdin(pid: number): Promise<void> {
    return this.routes.closeStdin(pid);
  }


  private async attach(pid: number, callbacks: OutputCallbacks, from: StreamOffsets): Promise<CommandHandle> {
    const sink = new OutputSink(callbacks, from);
    let onReady!: () => void;
    const ready = new Promise<void>((resolve) => { onReady = resolve; });
    const socket = await openStreamSocket(this.api, this.routes.stream(pid), { stdout: from.stdout, stderr: from.stderr }, {
      onData: (channel, bytes) => { sink.push(channel, bytes); onReady(); },
      onStarted: (_pid, maxOutputBytes) => {
        if (maxOutputBytes !== undefined) sink.limitTo(maxOutputBytes);
        onReady();
      },
    });
    // The server confirms the attach with `started` (or streams output); a refusal (PROCESS_NOT_FOUND) ends the socket.
    const end = await Promise.race([ready.then(() => undefined), socket.ended]);
    if (end?.kind === 'error') throw end.error;
    return new CommandHandle({ pid, routes: this.routes, sink, socket });
  }

  private async runForeground(request: CommandRequest, opts: CommandStartOpts): Promise<CommandResult> {
    const sink = new OutputSink(opts);
    const { socket, started, first } = await startOnStream(this.api, this.api.at(ROUTES.streamCommand, { id: this.sandboxId }), { type: 'start', request }, sink);
    if ('end' in first) {
      const { end } = first;
      if (end.kind === 'error') throw end.error;
      if (end.kind === 'dropped') {
        throw new ConnectionError(`command stream closed before the command started (${end.reason}); API ${this.api.config.apiUrl}`);
      }
      // The exit overtook the `started` frame: it still arrives before the server closes the socket.
      const pid = await Promise.race([started, socket.closed.then(() => -1)]);
      socket.close();
      sink.finish();
      const result: CommandResult = { pid, ...end.exit, ...sink.result() };
      if (!isSuccess(result)) throw new CommandExitError(result);
      return result;
    }
    const handle = new CommandHandle({ pid: first.pid, routes: this.routes, sink, socket });
    this.feedStdin(handle, opts.stdin);
    return handle.wait();
  }

  /** Send `stdin` data in the background, then close stdin, across pauses (stdin-feed.ts). */
  private feedStdin(handle: CommandHandle, stdin: CommandStartOpts['stdin']): void {
    if (stdin === undefined || typeof stdin === 'boolean') return;
    void feedStdin(handle, this.routes, stdin);
  }
}
