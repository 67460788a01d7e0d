/**
 * One watch of a directory: an `inotifywait` child reading the guest kernel's inotify events (gVisor's
 * sentry implements inotify for changes made inside the sandbox, the microVM's Linux its own), numbered
 * in arrival order and kept in a bounded buffer for listeners that are away (a checkpoint closes every
 * host connection; the child and the buffer are saved with the sandbox and go on after the restore).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { RamifyError, WATCH_BUFFER_EVENTS, type WatchEndReason, type WatchGapReason, type WatchInfo, type WatchWireEvent } from '@ramify/contracts';
import { inotifywaitArgs, parseRecord, RecordSplitter } from './inotify-events.js';

/** Someone listening to a watch: told when events arrive after its cursor, or when the watch ends. */
export interface WatchListener {
  notify(): void;
  ended(end: { reason: WatchEndReason; message?: string }): void;
}

/** The watcher program (Debian package `inotify-tools`, in every template's required packages). */
export const INOTIFYWAIT = 'inotifywait';

/** How long `inotifywait` may take to set its watches up before the start fails, ms (a large tree takes a while). */
const SETUP_LIMIT_MS = 120_000;

export class DirectoryWatch {
  readonly id: string;
  readonly path: string;
  readonly recursive: boolean;
  /** Events held, oldest first; `buffer[0]` has sequence number {@link firstSeq}. */
  #buffer: WatchWireEvent[] = [];
  #firstSeq = 1;
  #nextSeq = 1;
  readonly #listeners = new Set<WatchListener>();
  #child: ChildProcess | undefined;
  #end: { reason: WatchEndReason; message?: string } | undefined;
  #stderrTail = '';
  /** Time without listeners, ms (see the table's sweep). */
  idleMs = 0;

  constructor(id: string, path: string, recursive: boolean) {
    this.id = id;
    this.path = path;
    this.recursive = recursive;
  }

  get info(): WatchInfo {
    return { watchId: this.id, path: this.path, recursive: this.recursive, nextSeq: this.#nextSeq };
  }

  get firstSeq(): number {
    return this.#firstSeq;
  }

  get nextSeq(): number {
    return this.#nextSeq;
  }

  get ended(): { reason: WatchEndReason; message?: string } | undefined {
    return this.#end;
  }

  get listenerCount(): number {
    return this.#listeners.size;
  }

  /**
   * Start `inotifywait` and resolve once it reports its watches established.
   * @throws RamifyError WATCH_UNAVAILABLE (no `inotifywait`, or it could not set the watches up).
   */
  async start(): Promise<void> {
    const child = spawn(INOTIFYWAIT, inotifywaitArgs(this.path, this.recursive), { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    const splitter = new RecordSplitter();
    child.stdout!.on('data', (chunk: Buffer) => {
      for (const [flags, path] of splitter.push(chunk)) this.#record(flags, path);
    });
    await new Promise<void>((resolve, reject) => {
      let ready = false;
      const timer = setTimeout(() => fail(`inotifywait did not set its watches up within ${SETUP_LIMIT_MS} ms`), SETUP_LIMIT_MS);
      const fail = (why: string): void => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(new RamifyError('WATCH_UNAVAILABLE', `cannot watch ${this.path}: ${why}`, { path: this.path }));
      };
      child.stderr!.on('data', (chunk: Buffer) => {
        this.#stderrTail = (this.#stderrTail + chunk.toString('utf8')).slice(-2000);
        if (!ready && this.#stderrTail.includes('Watches established')) {
          ready = true;
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('error', (err: NodeJS.ErrnoException) => {
        if (ready) return;
        fail(err.code === 'ENOENT' ? `this template has no ${INOTIFYWAIT} (Debian package inotify-tools): rebuild the template` : err.message);
      });
      child.once('exit', (code, signal) => {
        if (!ready) fail(`${INOTIFYWAIT} exited (${signal ?? code}): ${this.#stderrTail.trim() || 'no message'}`);
        else this.finish('failed', `${INOTIFYWAIT} exited (${signal ?? code}): ${this.#stderrTail.trim() || 'no message'}`);
      });
    });
  }

  /** Events from sequence number `from` on (at most `max`); the caller checks `from >= firstSeq`. */
  read(from: number, max: number): WatchWireEvent[] {
    const start = Math.max(0, from - this.#firstSeq);
    return this.#buffer.slice(start, start + max);
  }

  /**
   * A gap marker for a listener whose cursor fell behind the buffer. It stands in the place of the last
   * event dropped (`seq` = {@link firstSeq} - 1), so a client's next sequence number is always the last
   * one it got plus one.
   */
  gap(reason: WatchGapReason): WatchWireEvent {
    return { type: 'overflow', seq: this.#firstSeq - 1, reason };
  }

  listen(listener: WatchListener): void {
    this.idleMs = 0;
    this.#listeners.add(listener);
    if (this.#end) listener.ended(this.#end);
  }

  unlisten(listener: WatchListener): void {
    this.#listeners.delete(listener);
  }

  /** End the watch: stop the child, tell every listener once. */
  finish(reason: WatchEndReason, message?: string): void {
    if (this.#end) return;
    this.#end = message === undefined ? { reason } : { reason, message };
    const child = this.#child;
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    for (const listener of [...this.#listeners]) listener.ended(this.#end);
    this.#listeners.clear();
  }

  #record(flags: string, path: string): void {
    if (this.#end) return;
    const parsed = parseRecord(this.path, flags, path);
    if (parsed.overflow) this.#push({ type: 'overflow', seq: 0, reason: 'kernel' });
    for (const event of parsed.events) this.#push({ ...event, seq: 0 });
    for (const listener of this.#listeners) listener.notify();
    if (parsed.rootGone) this.finish('removed');
  }

  #push(event: WatchWireEvent): void {
    event.seq = this.#nextSeq++;
    this.#buffer.push(event);
    // Drop in slices, so a long run of events costs one copy per thousand.
    if (this.#buffer.length > WATCH_BUFFER_EVENTS + 1000) {
      const drop = this.#buffer.length - WATCH_BUFFER_EVENTS;
      this.#buffer = this.#buffer.slice(drop);
      this.#firstSeq += drop;
    }
  }
}
