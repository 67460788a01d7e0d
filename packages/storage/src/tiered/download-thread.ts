/**
 * `DownloadThreads`: snapshot downloads (the cold half of a cross-host resume) run on threads of their own
 * (`node:worker_threads`, ./download-worker.ts), taking an image's chunks from one shared counter (the next
 * free request on either thread fetches the next chunk) into files the main thread prepared. Receiving ~90 MB of chunks through the SDK allocates a buffer per socket read; on
 * the daemon's large heap that set off a full collection every few tens of MB, and the main thread hashed
 * every byte too: a download kept the main thread 60-85 % busy and took 2.5x as long as the same download
 * in a small process. On threads the collections scan small heaps, and two threads hash and parse on two
 * cores (one alone was busy the whole download: its hashing, parsing and collections were the limit).
 * Measured in docs/design/STORAGE.md, "Downloads on threads of their own".
 *
 * The threads are started by {@link DownloadThreads.start} (their modules and S3 clients load then, not
 * inside the first resume), kept for the process' life (unref'd while idle: they never keep the process
 * alive), and started again at the next download when one died or was closed (the jobs it held fail with
 * `STORAGE_UNAVAILABLE`). Lifecycle: `new` → `start()` → `run()` any number of times → `close()`.
 */
import { RamifyError } from '@ramify/contracts';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { S3ConnectionOptions } from '../s3/s3-connection.js';
import { errorFromWire, type DownloadWorkerData, type FromDownloadWorker, type ToDownloadWorker } from './download-protocol.js';
import { prepareImageFiles } from './download.js';
import type { RemoteManifest } from './remote-manifest.js';

export interface DownloadJob {
  manifest: RemoteManifest;
  /** Directory to write the image into (as `downloadSnapshot`'s `imageDir`). */
  imageDir: string;
  /** Chunk requests in flight at most, over all threads. */
  parallelism: number;
  /** Told each chunk found in the bucket (also those of a download that failed later). */
  onSeen: (sha256: string) => void;
  /** Called once the image's files exist at their full sizes, before any chunk is fetched. */
  onPrepared?: () => void;
  signal?: AbortSignal;
}

export class DownloadThreads {
  readonly #threads: DownloadThread[];

  /**
   * `connection`: the bucket's settings (plain data: each thread makes its own S3 client from them);
   * `count`: threads, default one per core, at most 2; `warmUp`: each thread runs the download path on a
   * probe object when it starts (a daemon's threads: their first download is then as fast as the next).
   */
  constructor(connection: S3ConnectionOptions, options: { count?: number; warmUp?: boolean } = {}) {
    const count = options.count ?? Math.max(1, Math.min(2, availableParallelism()));
    this.#threads = Array.from({ length: count }, () => new DownloadThread({ connection, warmUp: options.warmUp ?? false }));
  }

  /** Start the threads (idempotent). */
  start(): void {
    for (const thread of this.#threads) thread.start();
  }

  /** Resolves once every thread has started (and warmed up, see the constructor), to how many warmed up; starts them if need be. */
  async ready(): Promise<number> {
    this.start();
    return (await Promise.all(this.#threads.map((thread) => thread.ready))).filter(Boolean).length;
  }

  /**
   * Download `job.manifest` into `job.imageDir`, the threads taking its chunks from one counter, with the
   * same checks and errors as `downloadSnapshot` (download.ts): resolves with the image's bytes.
   * @throws RamifyError `RUNTIME_ERROR` (corrupt or missing chunk), `STORAGE_UNAVAILABLE` (the bucket, or
   *   a thread, failed); the signal's reason when aborted. The first failure stops the other threads' shares.
   */
  async run(job: DownloadJob): Promise<{ bytes: number }> {
    job.signal?.throwIfAborted();
    const of = this.#threads.length;
    const stop = new AbortController();
    const onAbort = (): void => stop.abort(job.signal?.reason);
    job.signal?.addEventListener('abort', onAbort, { once: true });
    let first: { error: unknown } | null = null;
    let bytes = 0;
    try {
      ({ bytes } = await prepareImageFiles(job.manifest, job.imageDir));
      stop.signal.throwIfAborted();
      job.onPrepared?.();
      const share = { next: new Int32Array(new SharedArrayBuffer(4)) };
      await Promise.allSettled(
        this.#threads.map((thread) =>
          thread.run({ ...job, parallelism: Math.max(1, Math.ceil(job.parallelism / of)), share, signal: stop.signal }).catch((error: unknown) => {
            first ??= { error };
            stop.abort(error);
          }),
        ),
      );
    } finally {
      job.signal?.removeEventListener('abort', onAbort);
    }
    if (first) throw (first as { error: unknown }).error;
    return { bytes };
  }

  /** Stop the threads; downloads still running fail (a later {@link run} starts them again). */
  async close(): Promise<void> {
    await Promise.all(this.#threads.map((thread) => thread.close()));
  }
}

interface Job {
  resolve: () => void;
  reject: (error: Error) => void;
  onSeen: (sha256: string) => void;
}

/** One worker thread and the jobs it runs. */
class DownloadThread {
  readonly #data: DownloadWorkerData;
  #worker: Worker | null = null;
  readonly #jobs = new Map<number, Job>();
  #nextId = 1;
  /** Settled once the current worker said it is ready (true: it warmed up), or it is gone (false). */
  ready: Promise<boolean> = Promise.resolve(false);
  #markReady: (warmedUp: boolean) => void = () => undefined;

  constructor(data: DownloadWorkerData) {
    this.#data = data;
  }

  start(): void {
    if (this.#worker) return;
    this.ready = new Promise<boolean>((resolve) => (this.#markReady = resolve));
    const worker = new Worker(new URL('./download-worker.js', import.meta.url), { workerData: this.#data });
    worker.on('message', (message: FromDownloadWorker) => this.#settle(message));
    worker.on('error', (error) => this.#lost(worker, error.message));
    worker.on('exit', (code) => this.#lost(worker, `exited with code ${code}`));
    worker.unref();
    this.#worker = worker;
  }

  run(job: Omit<DownloadJob, 'signal'> & { share: { next: Int32Array }; signal: AbortSignal }): Promise<void> {
    this.start();
    const worker = this.#worker!;
    const id = this.#nextId++;
    return new Promise<void>((resolve, reject) => {
      if (job.signal.aborted) return reject(job.signal.reason);
      const onAbort = (): void => worker.postMessage({ kind: 'cancel', id } satisfies ToDownloadWorker);
      job.signal.addEventListener('abort', onAbort, { once: true });
      const done = (): void => job.signal.removeEventListener('abort', onAbort);
      this.#jobs.set(id, { resolve: () => (done(), resolve()), reject: (error) => (done(), reject(error)), onSeen: job.onSeen });
      // In use: a download keeps the process alive as an in-thread one would.
      if (this.#jobs.size === 1) worker.ref();
      worker.postMessage({ kind: 'download', id, manifest: job.manifest, imageDir: job.imageDir, parallelism: job.parallelism, share: job.share } satisfies ToDownloadWorker);
    });
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = null;
    if (worker) await worker.terminate();
  }

  #settle(message: FromDownloadWorker): void {
    if (message.kind === 'ready') return this.#markReady(message.warmedUp);
    const job = this.#jobs.get(message.id);
    if (!job) return;
    this.#jobs.delete(message.id);
    if (this.#jobs.size === 0) this.#worker?.unref();
    for (const sha256 of message.seen) job.onSeen(sha256);
    if (message.kind === 'done') job.resolve();
    else job.reject(errorFromWire(message.error));
  }

  /** The thread failed or exited: its jobs fail; the next download starts a new one. */
  #lost(worker: Worker, why: string): void {
    if (this.#worker === worker) {
      this.#worker = null;
      this.#markReady(false);
    }
    for (const [id, job] of this.#jobs) {
      this.#jobs.delete(id);
      job.reject(new RamifyError('STORAGE_UNAVAILABLE', `snapshot download thread ${why}; the download was not finished`));
    }
  }
}
