/**
 * The egress log sink core provides: enforcement calls {@link BufferedEgressLog.record} on its packet and
 * DNS paths, so recording only validates and appends to an in-memory buffer (never blocks, never throws).
 * The buffer goes to the store in batches: `flushIntervalMs` after the first pending entry, or as soon as
 * `batchSize` are pending. Over `maxPending` new entries are dropped and counted; store errors are logged
 * (the batch is lost, the log is best-effort). One store write is in flight at a time, so entries reach
 * the store in the order recorded.
 */
import type { Clock } from '../ports/clock.js';
import type { EgressLogSink, EgressVerdict } from '../ports/egress.js';
import type { Logger } from '../ports/logger.js';
import type { EgressLogRecord, Store } from '../ports/store.js';

export interface BufferedEgressLogOptions {
  store: Pick<Store, 'appendEgressLog'>;
  logger: Logger;
  /** Stamps a verdict whose `at` is not a valid date. */
  clock: Clock;
  /** Write pending entries this long after the first one arrived, ms. Default 100. */
  flushIntervalMs?: number;
  /** Write at once when this many entries are pending. Default 500. */
  batchSize?: number;
  /** At most this many entries wait in memory; more are dropped (and counted). Default 20000. */
  maxPending?: number;
}

/** Defaults of {@link BufferedEgressLogOptions}. */
export const DEFAULT_EGRESS_LOG_BUFFER = { flushIntervalMs: 100, batchSize: 500, maxPending: 20_000 } as const;

/** Counters for diagnostics. */
export interface EgressLogStats {
  /** Entries waiting for the next write. */
  pending: number;
  /** Entries stored so far (the store skips those of unknown or killed sandboxes). */
  stored: number;
  /** Entries dropped: buffer full, malformed, recorded after close, or lost to a failed write. */
  dropped: number;
}

const PROTOCOLS: ReadonlySet<string> = new Set(['tcp', 'udp', 'icmp', 'dns']);
const VERDICTS: ReadonlySet<string> = new Set(['allowed', 'denied']);

export class BufferedEgressLog implements EgressLogSink {
  readonly #store: BufferedEgressLogOptions['store'];
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #flushIntervalMs: number;
  readonly #batchSize: number;
  readonly #maxPending: number;
  #pending: EgressLogRecord[] = [];
  #timer: NodeJS.Timeout | null = null;
  /** Whether {@link #timer} fires at once (a full batch) rather than after the interval. */
  #timerImmediate = false;
  /** The last write in flight (writes are chained: one at a time, in order). Never rejects. */
  #writing: Promise<void> = Promise.resolve();
  #closed = false;
  #stored = 0;
  #dropped = 0;
  /** Drops since the last warning (logged at the next write, not per entry). */
  #droppedUnreported = 0;

  constructor(options: BufferedEgressLogOptions) {
    this.#store = options.store;
    this.#logger = options.logger;
    this.#clock = options.clock;
    this.#flushIntervalMs = Math.max(0, options.flushIntervalMs ?? DEFAULT_EGRESS_LOG_BUFFER.flushIntervalMs);
    this.#batchSize = Math.max(1, options.batchSize ?? DEFAULT_EGRESS_LOG_BUFFER.batchSize);
    this.#maxPending = Math.max(1, options.maxPending ?? DEFAULT_EGRESS_LOG_BUFFER.maxPending);
  }

  /** Queue one verdict for the log. Fire-and-forget: never throws, never waits. */
  record(verdict: EgressVerdict): void {
    try {
      if (this.#closed || this.#pending.length >= this.#maxPending) return this.#drop(1);
      const entry = toRecord(verdict, this.#clock);
      if (entry === null) return this.#drop(1);
      this.#pending.push(entry);
      if (this.#pending.length >= this.#batchSize) this.#schedule(0);
      else this.#schedule(this.#flushIntervalMs);
    } catch {
      this.#drop(1);
    }
  }

  /** Write every pending entry now; resolves once they (and earlier batches) are in the store or dropped. Never rejects. */
  flush(): Promise<void> {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    if (this.#pending.length > 0 || this.#droppedUnreported > 0) {
      const batch = this.#pending;
      this.#pending = [];
      this.#writing = this.#writing.then(() => this.#write(batch));
    }
    return this.#writing;
  }

  /** Flush, then refuse further entries (they are dropped). Call before closing the store. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.flush();
  }

  stats(): EgressLogStats {
    return { pending: this.#pending.length, stored: this.#stored, dropped: this.#dropped };
  }

  /** Arrange a flush within `delayMs` (keeps an earlier one already due). */
  #schedule(delayMs: number): void {
    if (this.#timer && (delayMs > 0 || this.#timerImmediate)) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timerImmediate = delayMs === 0;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.flush();
    }, delayMs);
    this.#timer.unref();
  }

  async #write(batch: EgressLogRecord[]): Promise<void> {
    if (this.#droppedUnreported > 0) {
      this.#logger.warn('egress log: entries dropped (buffer full, malformed, or recorded after close)', { dropped: this.#droppedUnreported, totalDropped: this.#dropped });
      this.#droppedUnreported = 0;
    }
    if (batch.length === 0) return;
    try {
      this.#stored += await this.#store.appendEgressLog(batch);
    } catch (err) {
      this.#dropped += batch.length;
      this.#logger.error('egress log: writing entries to the store failed; they are lost', { entries: batch.length, error: err instanceof Error ? err.message : String(err) });
    }
  }

  #drop(count: number): void {
    this.#dropped += count;
    this.#droppedUnreported += count;
    // Report without waiting for the next entry (a full buffer already has a write due).
    if (!this.#closed && !this.#timer && this.#pending.length === 0) this.#schedule(this.#flushIntervalMs);
  }
}

/** The stored shape of a verdict, or null when it is malformed (unknown protocol or verdict, no sandbox id). */
function toRecord(v: EgressVerdict, clock: Clock): EgressLogRecord | null {
  if (typeof v.sandboxId !== 'string' || v.sandboxId === '' || !PROTOCOLS.has(v.protocol) || !VERDICTS.has(v.verdict)) return null;
  const parsed = typeof v.at === 'string' ? Date.parse(v.at) : Number.NaN;
  return {
    sandboxId: v.sandboxId,
    at: Number.isFinite(parsed) ? parsed : clock.now(),
    protocol: v.protocol,
    destination: typeof v.destination === 'string' ? v.destination : '',
    port: typeof v.port === 'number' && Number.isInteger(v.port) ? v.port : null,
    name: typeof v.name === 'string' ? v.name : null,
    verdict: v.verdict,
    rule: typeof v.rule === 'string' ? v.rule : null,
  };
}
