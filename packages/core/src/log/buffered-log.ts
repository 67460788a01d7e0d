/**
 * A log sink that never blocks its caller: {@link BufferedLog.record} validates and appends to an
 * in-memory buffer (never throws, never waits), and the buffer goes to the store in batches:
 * `flushIntervalMs` after the first pending entry, or as soon as `batchSize` are pending. Over
 * `maxPending` new entries are dropped and counted; store errors are logged (the batch is lost: the log
 * is best-effort). One write is in flight at a time, so entries reach the store in the order recorded.
 * The egress log and the ingress log are two of these.
 */
import type { Logger } from '../ports/logger.js';

export interface BufferedLogOptions<R> {
  /** Store one batch in order; resolves with how many were kept (the store skips unknown and killed sandboxes). */
  write: (batch: readonly R[]) => Promise<number>;
  logger: Logger;
  /** Name in log lines (`egress log`). */
  name: string;
  /** Write pending entries this long after the first one arrived, ms. Default 100. */
  flushIntervalMs?: number;
  /** Write at once when this many entries are pending. Default 500. */
  batchSize?: number;
  /** At most this many entries wait in memory; more are dropped (and counted). Default 20000. */
  maxPending?: number;
}

/** Defaults of {@link BufferedLogOptions}. */
export const DEFAULT_LOG_BUFFER = { flushIntervalMs: 100, batchSize: 500, maxPending: 20_000 } as const;

/** Counters for diagnostics. */
export interface BufferedLogStats {
  /** Entries waiting for the next write. */
  pending: number;
  /** Entries stored so far (the store skips those of unknown or killed sandboxes). */
  stored: number;
  /** Entries dropped: buffer full, malformed, recorded after close, or lost to a failed write. */
  dropped: number;
}

/** Buffers inputs `I`, turned into stored records `R` by `toRecord` (null: malformed, dropped). */
export class BufferedLog<I, R> {
  readonly #options: BufferedLogOptions<R>;
  readonly #toRecord: (input: I) => R | null;
  readonly #flushIntervalMs: number;
  readonly #batchSize: number;
  readonly #maxPending: number;
  #pending: R[] = [];
  #timer: NodeJS.Timeout | null = null;
  /** Whether {@link #timer} fires at once (a full batch) rather than after the interval. */
  #timerImmediate = false;
  /** The last write in flight (writes are chained: one at a time, in order). Never rejects. */
  #writing: Promise<void> = Promise.resolve();
  #closed = false;
  readonly #sources = new Set<() => Promise<void>>();
  #stored = 0;
  #dropped = 0;
  /** Drops since the last warning (logged at the next write, not per entry). */
  #droppedUnreported = 0;

  constructor(options: BufferedLogOptions<R>, toRecord: (input: I) => R | null) {
    this.#options = options;
    this.#toRecord = toRecord;
    this.#flushIntervalMs = Math.max(0, options.flushIntervalMs ?? DEFAULT_LOG_BUFFER.flushIntervalMs);
    this.#batchSize = Math.max(1, options.batchSize ?? DEFAULT_LOG_BUFFER.batchSize);
    this.#maxPending = Math.max(1, options.maxPending ?? DEFAULT_LOG_BUFFER.maxPending);
  }

  /** Queue one entry. Fire-and-forget: never throws, never waits. */
  record(input: I): void {
    try {
      if (this.#closed || this.#pending.length >= this.#maxPending) return this.#drop(1);
      const entry = this.#toRecord(input);
      if (entry === null) return this.#drop(1);
      this.#pending.push(entry);
      if (this.#pending.length >= this.#batchSize) this.#schedule(0);
      else this.#schedule(this.#flushIntervalMs);
    } catch {
      this.#drop(1);
    }
  }

  /**
   * Entries recorded elsewhere first (the ingress's thread batches its own): `pull` brings them in (it
   * calls {@link record}) and resolves once it has. {@link flush} and {@link close} pull from every source
   * first, so a read after a flush sees them. Returns the function that removes the source.
   */
  addSource(pull: () => Promise<void>): () => void {
    this.#sources.add(pull);
    return () => this.#sources.delete(pull);
  }

  /**
   * Pull from the sources, then write every pending entry; resolves once they (and earlier batches) are
   * in the store or dropped. Never rejects.
   */
  async flush(): Promise<void> {
    await this.#pull();
    return this.#flushPending();
  }

  /** Flush, then refuse further entries (they are dropped). Call before closing the store. */
  async close(): Promise<void> {
    await this.#pull();
    this.#closed = true;
    await this.#flushPending();
  }

  async #pull(): Promise<void> {
    if (this.#sources.size > 0) await Promise.allSettled([...this.#sources].map((pull) => pull()));
  }

  #flushPending(): Promise<void> {
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

  stats(): BufferedLogStats {
    return { pending: this.#pending.length, stored: this.#stored, dropped: this.#dropped };
  }

  /** Arrange a flush within `delayMs` (keeps an earlier one already due). */
  #schedule(delayMs: number): void {
    if (this.#timer && (delayMs > 0 || this.#timerImmediate)) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timerImmediate = delayMs === 0;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#flushPending();
    }, delayMs);
    this.#timer.unref();
  }

  async #write(batch: R[]): Promise<void> {
    const { logger, name } = this.#options;
    if (this.#droppedUnreported > 0) {
      logger.warn(`${name}: entries dropped (buffer full, malformed, or recorded after close)`, { dropped: this.#droppedUnreported, totalDropped: this.#dropped });
      this.#droppedUnreported = 0;
    }
    if (batch.length === 0) return;
    try {
      this.#stored += await this.#options.write(batch);
    } catch (err) {
      this.#dropped += batch.length;
      logger.error(`${name}: writing entries to the store failed; they are lost`, { entries: batch.length, error: err instanceof Error ? err.message : String(err) });
    }
  }

  #drop(count: number): void {
    this.#dropped += count;
    this.#droppedUnreported += count;
    // Report without waiting for the next entry (a full buffer already has a write due).
    if (!this.#closed && !this.#timer && this.#pending.length === 0) this.#schedule(this.#flushIntervalMs);
  }
}
