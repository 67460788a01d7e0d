/**
 * `ActivityBatch`: the ingress thread's side of what the main thread must see of requests, sent in
 * batches: holds (a request or WebSocket is use of its sandbox while it lasts, for idle auto-pause) and
 * ingress log entries. Cheap on the hot path: a request normally costs no message of its own.
 *
 * - A hold opened on a sandbox the main thread sees no hold on is sent at once (in the same turn of the
 *   event loop, coalesced with the turn's others): idle auto-pause must never miss a request in flight.
 * - Everything else waits up to `flushMs`: a hold opened while the main thread already sees one (it counts
 *   the sandbox in use anyway), a release (a late release only keeps a sandbox "in use" a little longer),
 *   a log entry (a read of the log flushes first: {@link ActivityBatch.flush}).
 * The main thread applies a batch's opens before its releases, so a request that came and went between two
 * batches still touches its sandbox.
 */
import type { IngressLogRecord } from '@ramify/core';
import type { ActivityBatchMessage } from './protocol.js';

export class ActivityBatch {
  /** Holds opened / released since the last batch, per sandbox. */
  private opened = new Map<string, number>();
  private released = new Map<string, number>();
  private logs: IngressLogRecord[] = [];
  /** Holds the main thread knows to be open, per sandbox (sent opens minus sent releases). */
  private readonly reported = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private immediate: NodeJS.Immediate | null = null;

  constructor(
    private readonly post: (batch: ActivityBatchMessage) => void,
    private readonly flushMs: number,
  ) {}

  /** The request counts as use of `sandboxId` until the returned function is called (idempotent). */
  hold(sandboxId: string): () => void {
    this.opened.set(sandboxId, (this.opened.get(sandboxId) ?? 0) + 1);
    if ((this.reported.get(sandboxId) ?? 0) === 0) this.soon();
    else this.later();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.released.set(sandboxId, (this.released.get(sandboxId) ?? 0) + 1);
      this.later();
    };
  }

  /** Queue a finished request's log entry. */
  log(entry: IngressLogRecord): void {
    this.logs.push(entry);
    this.later();
  }

  /** Send what is pending now (nothing when nothing is). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = null;
    this.immediate = null;
    if (this.opened.size === 0 && this.released.size === 0 && this.logs.length === 0) return;
    const batch: ActivityBatchMessage = { kind: 'activity', opened: [...this.opened], released: [...this.released], logs: this.logs };
    for (const [id, n] of this.opened) this.reported.set(id, (this.reported.get(id) ?? 0) + n);
    for (const [id, n] of this.released) {
      const left = (this.reported.get(id) ?? 0) - n;
      if (left > 0) this.reported.set(id, left);
      else this.reported.delete(id);
    }
    this.opened = new Map();
    this.released = new Map();
    this.logs = [];
    this.post(batch);
  }

  /** Flush at the end of this turn of the event loop. */
  private soon(): void {
    if (this.immediate) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.immediate = setImmediate(() => this.flush());
  }

  /** Flush within `flushMs` (an earlier flush already due stays). */
  private later(): void {
    if (this.immediate || this.timer) return;
    this.timer = setTimeout(() => this.flush(), this.flushMs);
    this.timer.unref();
  }
}
