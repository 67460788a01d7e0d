/**
 * `files.watchDir`: a directory's changes in a sandbox, as E2B's SDK delivers them (`onEvent` with
 * `{ type, name }`, a handle with `stop()`), across pauses. The watch lives in the sandbox's agent and
 * numbers its events; when the stream drops (a pause closes it) the handle waits for the sandbox to run
 * again and re-attaches from the next number, so events made meanwhile still arrive, in order. Where
 * some may be missing (the agent's buffer or the kernel's queue overflowed, or the watch was lost and a
 * new one started) the handle calls `onOverflow` at that point of the stream and counts it.
 */
import { ROUTES } from '@ramify/contracts/client';
import type { FilesystemEvent, WatchEndReason, WatchGapReason, WatchWireEvent } from '@ramify/contracts';
import type { ApiClient } from './http.js';
import { ConnectionError, RamifyError, SandboxFailedError } from './errors.js';
import { openWatchSocket, type WatchSocket, type WatchSocketEnd } from './watch-socket.js';

export type { FilesystemEvent, FilesystemEventType, WatchGapReason } from '@ramify/contracts';

/** Where events may be missing (see {@link WatchOpts.onOverflow}). */
export interface WatchOverflow {
  reason: WatchGapReason;
}

/** Options of `files.watchDir` (E2B's names). */
export interface WatchOpts {
  /** Watch subdirectories too, present and future (default false). */
  recursive?: boolean;
  /** Stop the watch after this long, ms; 0 or absent: until {@link WatchHandle.stop} (E2B defaults to 60 s). */
  timeoutMs?: number;
  /** Called once when the watch stops: without an error after `stop()` or the timeout, with one otherwise (the directory was removed, the sandbox was killed). */
  onExit?: (err?: Error) => void | Promise<void>;
  /** Called, in stream order, where events may be missing. */
  onOverflow?: (overflow: WatchOverflow) => void;
}

/** Reconnects in a row without getting anything before the handle gives up (the sandbox running all along). */
const MAX_RECONNECTS = 6;
const backoffMs = (attempt: number): number => Math.min(2000, 100 * 2 ** attempt);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Sandbox states after which the watch comes back. */
const WAIT_STATES: ReadonlySet<string> = new Set(['pausing', 'paused', 'resuming']);
/** How long `stop()` waits for the daemon to confirm, ms. */
const STOP_WAIT_MS = 5_000;

/** Internal construction parameters. */
export interface WatchHandleInit {
  api: ApiClient;
  sandboxId: string;
  onEvent: (event: FilesystemEvent) => void | Promise<void>;
  opts: WatchOpts;
}

/** A running watch. Returned by `sandbox.files.watchDir`. */
export class WatchHandle {
  readonly #api: ApiClient;
  readonly #sandboxId: string;
  readonly #onEvent: WatchHandleInit['onEvent'];
  readonly #opts: WatchOpts;
  #socket!: WatchSocket;
  #path = '';
  #nextSeq = 1;
  #overflows = 0;
  #stopped = false;
  #failures = 0;
  #timer: NodeJS.Timeout | undefined;
  #followed: Promise<void> = Promise.resolve();

  /** @internal Use `sandbox.files.watchDir`. */
  constructor(init: WatchHandleInit) {
    this.#api = init.api;
    this.#sandboxId = init.sandboxId;
    this.#onEvent = init.onEvent;
    this.#opts = init.opts;
  }

  /** @internal Start the watch; resolves once every later change is reported. */
  async start(path: string): Promise<this> {
    this.#socket = await openWatchSocket(this.#api, this.#api.at(ROUTES.watchDir, { id: this.#sandboxId }), { path, recursive: String(this.#opts.recursive === true) }, (events) => this.#deliver(events));
    this.#path = this.#socket.path;
    this.#nextSeq = this.#socket.from;
    if (this.#opts.timeoutMs) this.#timer = setTimeout(() => void this.stop(), this.#opts.timeoutMs);
    this.#followed = this.#follow();
    return this;
  }

  /** The watch's id in the sandbox (it changes if the watch had to be started again). */
  get watchId(): string {
    return this.#socket.watchId;
  }

  /** Absolute path watched. */
  get path(): string {
    return this.#path;
  }

  /** How many times events may have been missed (each also reported to `onOverflow`). */
  get overflows(): number {
    return this.#overflows;
  }

  /** Stop watching (the sandbox's watcher ends too when it can be reached); `onExit` is called without an error. */
  async stop(): Promise<void> {
    if (this.#stopped) return this.#followed;
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#socket.sendStop();
    const confirmed = await Promise.race([this.#socket.ended.then((end) => end.kind === 'end'), sleep(STOP_WAIT_MS).then(() => false)]);
    if (!confirmed) {
      // The stream was down (a paused sandbox): stop it through the API; an expired watch is gone anyway.
      await this.#api.at(ROUTES.stopWatch, { id: this.#sandboxId, watchId: this.#socket.watchId }).empty().catch(() => undefined);
    }
    this.#socket.close();
    return this.#followed;
  }


  #deliver(events: WatchWireEvent[]): void {
    for (const event of events) {
      if (event.seq < this.#nextSeq) continue; // Already had it (a replay overlapping what arrived).
      this.#nextSeq = event.seq + 1;
      this.#failures = 0;
      if (event.type === 'overflow') this.#gap(event.reason);
      else void Promise.resolve(this.#onEvent({ type: event.type, name: event.name, path: event.path, isDir: event.isDir })).catch(() => undefined);
    }
  }

  #gap(reason: WatchGapReason): void {
    this.#overflows += 1;
    try {
      this.#opts.onOverflow?.({ reason });
    } catch {
      // A callback's exception must not end the watch.
    }
  }

  async #follow(): Promise<void> {
    let error: Error | undefined;
    try {
      for (;;) {
        const end: WatchSocketEnd = await this.#socket.ended;
        if (end.kind === 'end') {
          if (end.reason !== 'stopped') error = endError(this.#path, end.reason, end.message);
          break;
        }
        if (this.#stopped) break;
        this.#socket = await this.#reconnect(end.reason);
        if (this.#stopped) break;
      }
    } catch (err) {
      error = err instanceof Error ? err : new Error(String(err));
    }
    clearTimeout(this.#timer);
    this.#stopped = true;
    try {
      await this.#opts.onExit?.(error);
    } catch {
      // Nothing to report it to.
    }
  }

  /** Re-attach from the next sequence number; a watch the sandbox no longer has is started again (an overflow). */
  async #reconnect(firstReason: string): Promise<WatchSocket> {
    let reason = firstReason;
    for (;;) {
      if (this.#failures >= MAX_RECONNECTS) throw new ConnectionError(`watch of ${this.#path} dropped ${this.#failures} times in a row (last: ${reason}); API ${this.#api.config.apiUrl}`);
      await sleep(backoffMs(this.#failures));
      this.#failures += 1;
      if (this.#stopped) return this.#socket;
      try {
        return await openWatchSocket(this.#api, this.#api.at(ROUTES.rewatchDir, { id: this.#sandboxId, watchId: this.#socket.watchId }), { from: String(this.#nextSeq) }, (events) => this.#deliver(events));
      } catch (err) {
        if (!(err instanceof RamifyError)) throw err;
        reason = err.message;
        if (err.code === 'WATCH_NOT_FOUND') return this.#rewatch();
        if (err.code !== 'API_UNREACHABLE' && err.code !== 'REQUEST_TIMEOUT') await this.#waitWhilePaused(err);
      }
    }
  }

  async #rewatch(): Promise<WatchSocket> {
    const socket = await openWatchSocket(this.#api, this.#api.at(ROUTES.watchDir, { id: this.#sandboxId }), { path: this.#path, recursive: String(this.#opts.recursive === true) }, (events) => this.#deliver(events));
    this.#nextSeq = socket.from;
    this.#gap('rewatched');
    return socket;
  }

  /** While the sandbox is pausing, paused or resuming, wait; rethrow `err` for anything else. */
  async #waitWhilePaused(err: RamifyError): Promise<void> {
    if (err.code !== 'INVALID_STATE' && err.code !== 'AGENT_UNREACHABLE') throw err;
    for (;;) {
      const info = await this.#api.at(ROUTES.getSandbox, { id: this.#sandboxId }).json<{ state: string; error?: string | null }>().catch(() => {
        throw err;
      });
      if (info.state === 'error') throw new SandboxFailedError(`sandbox '${this.#sandboxId}' failed: ${info.error ?? 'no reason recorded'}`, { id: this.#sandboxId, reason: info.error ?? null });
      if (info.state === 'running') {
        this.#failures = 0;
        return;
      }
      if (!WAIT_STATES.has(info.state) || this.#stopped) throw err;
      await sleep(1000);
    }
  }
}

/** The error `onExit` gets when the watch ended by itself. */
function endError(path: string, reason: WatchEndReason, message?: string): RamifyError {
  const why = reason === 'removed' ? 'the watched directory was removed or moved' : reason === 'expired' ? 'nobody listened for a minute' : `the watcher failed${message ? `: ${message}` : ''}`;
  return new RamifyError('WATCH_NOT_FOUND', `watch of ${path} ended: ${why}`, { path, reason });
}
