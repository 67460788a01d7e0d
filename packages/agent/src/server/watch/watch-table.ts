/**
 * The agent's watches, shared by every connection (as the process table is): started, attached to from
 * a sequence number, stopped, and swept when nobody listened for {@link WATCH_ORPHAN_MS}. A connection's
 * listeners end with it; the watches do not.
 *
 * Idle time is counted in sweeps of at most {@link SWEEP_MS} x 2 each: under gVisor the monotonic clock
 * jumps by the time a sandbox was paused, and a watch must not expire in the moment between a restore
 * and its client re-attaching.
 */
import { stat } from 'node:fs/promises';
import { RamifyError, WATCH_ORPHAN_MS, type WatchEndReason, type WatchInfo, type WatchOptions, type WatchWireEvent } from '@ramify/contracts';
import type { WatchEventsMessage } from '../../protocol/messages.js';
import type { AgentConnection } from '../connection.js';
import { fsError, resolvePath } from '../files.js';
import { DirectoryWatch, type WatchListener } from './directory-watch.js';

/** How often idle watches are looked at, ms. */
const SWEEP_MS = 5_000;
/** Events per frame to a listener. */
const EVENTS_PER_FRAME = 512;

export class WatchTable {
  readonly #watches = new Map<string, DirectoryWatch>();
  #nextId = 1;
  #sweeper: NodeJS.Timeout | undefined;
  #lastSweep = 0;

  /**
   * Start a watch of `options.path` (an existing directory) and listen to it on `conn` as `sub`.
   * @throws RamifyError FILE_NOT_FOUND, NOT_A_DIRECTORY, WATCH_UNAVAILABLE.
   */
  async start(options: WatchOptions, conn: AgentConnection, sub: number): Promise<WatchInfo> {
    const path = resolvePath(options.path);
    const st = await stat(path).catch((err: unknown) => {
      throw fsError(err, path);
    });
    if (!st.isDirectory()) throw new RamifyError('NOT_A_DIRECTORY', `not a directory: ${path} (watch a directory)`, { path });
    const watch = new DirectoryWatch(`w${this.#nextId++}`, path, options.recursive === true);
    await watch.start();
    this.#watches.set(watch.id, watch);
    this.#listen(watch, conn, sub, watch.nextSeq);
    this.#armSweeper();
    return watch.info;
  }

  /**
   * Listen to watch `watchId` on `conn` as `sub` from sequence number `from`: what the buffer holds is
   * replayed first, after a gap marker when it no longer holds `from`. @throws RamifyError WATCH_NOT_FOUND.
   */
  attach(watchId: string, from: number, conn: AgentConnection, sub: number): { from: number; path: string; recursive: boolean } {
    const watch = this.#get(watchId);
    const start = Math.min(Math.max(from, 1), watch.nextSeq);
    this.#listen(watch, conn, sub, start);
    return { from: Math.max(start, watch.firstSeq), path: watch.path, recursive: watch.recursive };
  }

  /** @throws RamifyError WATCH_NOT_FOUND. */
  stop(watchId: string): void {
    const watch = this.#get(watchId);
    this.#watches.delete(watchId);
    watch.finish('stopped');
  }

  #get(watchId: string): DirectoryWatch {
    const watch = this.#watches.get(watchId);
    if (!watch || watch.ended) throw new RamifyError('WATCH_NOT_FOUND', `no watch '${watchId}' in this sandbox (stopped, ended or expired)`, { watchId });
    return watch;
  }

  #listen(watch: DirectoryWatch, conn: AgentConnection, sub: number, from: number): void {
    const listener = new ConnectionListener(watch, conn, sub, from);
    conn.onUnsubscribe(sub, () => watch.unlisten(listener));
    watch.listen(listener);
    listener.notify();
  }

  #armSweeper(): void {
    if (this.#sweeper) return;
    this.#lastSweep = Date.now();
    this.#sweeper = setInterval(() => this.#sweep(), SWEEP_MS);
    this.#sweeper.unref();
  }

  #sweep(): void {
    const now = Date.now();
    const elapsed = Math.min(Math.max(now - this.#lastSweep, 0), SWEEP_MS * 2);
    this.#lastSweep = now;
    for (const [id, watch] of this.#watches) {
      if (watch.ended) this.#watches.delete(id);
      else if (watch.listenerCount > 0) watch.idleMs = 0;
      else if ((watch.idleMs += elapsed) >= WATCH_ORPHAN_MS) {
        this.#watches.delete(id);
        watch.finish('expired');
      }
    }
    if (this.#watches.size === 0) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
    }
  }
}

/** Sends one watch's events to one connection, in frames, at the pace the connection takes them. */
class ConnectionListener implements WatchListener {
  #cursor: number;
  #flushing = false;
  #again = false;

  constructor(private readonly watch: DirectoryWatch, private readonly conn: AgentConnection, private readonly sub: number, from: number) {
    this.#cursor = from;
  }

  notify(): void {
    if (this.#flushing) {
      this.#again = true;
      return;
    }
    this.#flushing = true;
    void this.#flush().finally(() => {
      this.#flushing = false;
    });
  }

  ended(end: { reason: WatchEndReason; message?: string }): void {
    // After what is still unsent: a flush in progress finishes first.
    const send = (): void => this.conn.send({ t: 'fsend', sub: this.sub, ...end });
    if (this.#flushing) void this.#waitIdle().then(send);
    else send();
  }

  async #waitIdle(): Promise<void> {
    while (this.#flushing) await new Promise((resolve) => setImmediate(resolve));
  }

  async #flush(): Promise<void> {
    do {
      this.#again = false;
      while (!this.conn.isClosed && this.#cursor < this.watch.nextSeq) {
        await this.conn.writable();
        const events: WatchWireEvent[] = [];
        if (this.#cursor < this.watch.firstSeq) {
          events.push(this.watch.gap('buffer'));
          this.#cursor = this.watch.firstSeq;
        }
        const read = this.watch.read(this.#cursor, EVENTS_PER_FRAME);
        events.push(...read);
        this.#cursor += read.length;
        const message: WatchEventsMessage = { t: 'fsev', sub: this.sub, events };
        this.conn.send(message);
      }
    } while (this.#again);
  }
}
