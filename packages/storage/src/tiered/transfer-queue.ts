/**
 * The background work of tiered storage: uploads of committed snapshots and deletions of removed ones,
 * at most `concurrency` at once, each retried with exponential backoff until it succeeds, is cancelled,
 * or the queue closes. One job per snapshot: a newer job for the same snapshot replaces a queued one.
 * The queue holds no durable state: what it must still do is found again on disk after a restart
 * (committed snapshots without a durable marker, removal tombstones).
 */
import type { Logger } from '@ramify/core';
import { setMaxListeners } from 'node:events';

/** Each chunk request of an attempt listens on its signal: room for many in flight without a leak warning. */
const SIGNAL_LISTENERS = 256;

function newController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(SIGNAL_LISTENERS, controller.signal);
  return controller;
}

export type TransferKind = 'upload' | 'delete';

export interface TransferJobState {
  kind: TransferKind;
  /** `queued`: waiting for a slot or for its next retry; `running`: an attempt is in progress. */
  phase: 'queued' | 'running';
  failedAttempts: number;
  lastError: string | null;
}

export interface RetryOptions {
  /** Delay before the first retry, milliseconds; doubled after each failure. Default 1,000. */
  initialDelayMs?: number;
  /** Longest delay between retries, milliseconds. Default 60,000. */
  maxDelayMs?: number;
}

export interface TransferQueueOptions {
  /** Jobs running at once. */
  concurrency: number;
  retry?: RetryOptions;
  /** One attempt of a job; rejects to be retried. `signal` fires on cancel and close. */
  run(kind: TransferKind, snapshotId: string, signal: AbortSignal): Promise<void>;
  /** Called once a job succeeded and left the queue. */
  onDone?(kind: TransferKind, snapshotId: string): void;
  logger: Logger;
}

interface Job extends TransferJobState {
  snapshotId: string;
  controller: AbortController;
  /** Settles when the running attempt ends. */
  attempt: Promise<void> | null;
  timer: NodeJS.Timeout | null;
  /** A job that replaced this one while it ran: started when this attempt ends. */
  successor: TransferKind | null;
}

export class TransferQueue {
  private readonly jobs = new Map<string, Job>();
  private readonly ready: string[] = [];
  private running = 0;
  private closed = false;
  private readonly initialDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(private readonly options: TransferQueueOptions) {
    this.initialDelayMs = options.retry?.initialDelayMs ?? 1_000;
    this.maxDelayMs = options.retry?.maxDelayMs ?? 60_000;
  }

  /** Queue `kind` for `snapshotId`; replaces a queued job for it, or follows a running one. */
  enqueue(kind: TransferKind, snapshotId: string): void {
    if (this.closed) return;
    const existing = this.jobs.get(snapshotId);
    if (existing?.phase === 'running') {
      existing.successor = kind;
      if (existing.kind !== kind) existing.controller.abort(new Error(`replaced by a ${kind}`));
      return;
    }
    if (existing) this.drop(existing);
    this.jobs.set(snapshotId, { snapshotId, kind, phase: 'queued', failedAttempts: 0, lastError: null, controller: newController(), attempt: null, timer: null, successor: null });
    this.ready.push(snapshotId);
    this.pump();
  }

  /** What is queued or running for `snapshotId`, undefined when nothing. */
  state(snapshotId: string): TransferJobState | undefined {
    const job = this.jobs.get(snapshotId);
    return job && { kind: job.kind, phase: job.phase, failedAttempts: job.failedAttempts, lastError: job.lastError };
  }

  /** Drop `snapshotId`'s job, aborting a running attempt and waiting for it to end. */
  async cancel(snapshotId: string): Promise<void> {
    const job = this.jobs.get(snapshotId);
    if (!job) return;
    job.successor = null;
    job.controller.abort(new Error('cancelled'));
    this.drop(job);
    await job.attempt;
  }

  /** Stop: abort running attempts, wait for them, drop the rest (found again on disk at the next start). */
  async close(): Promise<void> {
    this.closed = true;
    const attempts = [...this.jobs.values()].map((job) => {
      job.successor = null;
      job.controller.abort(new Error('storage closed'));
      this.drop(job);
      return job.attempt;
    });
    await Promise.all(attempts);
  }

  /** Snapshots with a job (queued or running). */
  get size(): number {
    return this.jobs.size;
  }

  private drop(job: Job): void {
    if (job.timer) clearTimeout(job.timer);
    job.timer = null;
    if (this.jobs.get(job.snapshotId) === job) this.jobs.delete(job.snapshotId);
    const index = this.ready.indexOf(job.snapshotId);
    if (index >= 0 && job.phase === 'queued') this.ready.splice(index, 1);
  }

  private pump(): void {
    while (!this.closed && this.running < this.options.concurrency && this.ready.length > 0) {
      const job = this.jobs.get(this.ready.shift()!);
      if (job && job.phase === 'queued' && job.timer === null) this.start(job);
    }
  }

  private start(job: Job): void {
    job.phase = 'running';
    this.running++;
    job.attempt = this.options.run(job.kind, job.snapshotId, job.controller.signal).then(
      () => this.finish(job, null),
      (error: unknown) => this.finish(job, error),
    );
  }

  private finish(job: Job, error: unknown): void {
    this.running--;
    job.phase = 'queued';
    const current = this.jobs.get(job.snapshotId) === job;
    if (current && job.successor) {
      this.jobs.delete(job.snapshotId);
      const next = job.successor;
      job.successor = null;
      this.enqueue(next, job.snapshotId);
    } else if (current && error !== null && !job.controller.signal.aborted) {
      job.failedAttempts++;
      job.lastError = error instanceof Error ? error.message : String(error);
      const delayMs = Math.min(this.maxDelayMs, this.initialDelayMs * 2 ** (job.failedAttempts - 1));
      this.options.logger.warn(`snapshot storage: ${job.kind} failed; retrying`, { snapshotId: job.snapshotId, attempt: job.failedAttempts, retryInMs: delayMs, error: job.lastError });
      job.timer = setTimeout(() => {
        job.timer = null;
        this.ready.push(job.snapshotId);
        this.pump();
      }, delayMs);
      job.timer.unref();
    } else if (current) {
      this.jobs.delete(job.snapshotId);
      if (error === null) this.options.onDone?.(job.kind, job.snapshotId);
    }
    this.pump();
  }
}
