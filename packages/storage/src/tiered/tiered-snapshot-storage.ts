/**
 * Tiered snapshot storage: local disk ({@link LocalSnapshotStorage}, same layout) as a cache in front
 * of an S3-compatible bucket ({@link S3ChunkStore}). The lifecycle of an image:
 * 1. `prepare` + the runtime's checkpoint + `commit`: safe on local disk (fsynced); `commit` returns.
 * 2. In the background: uploaded as content-addressed chunks, manifest last; then `durable.json`.
 *    A failed upload is retried with backoff (S3 down: the image stays local, nothing is lost); after
 *    a restart, {@link start} queues every cached image without a marker again.
 * 3. Durable images count against `cacheBudgetBytes`; the least recently used are evicted locally.
 * 4. `open` of an image not cached here (evicted, or uploaded by another host) downloads and checks
 *    it (sha256 per chunk and per file) into the cache first.
 * Design and measurements: docs/design/STORAGE.md.
 */
import { RamifyError, notFound } from '@ramify/contracts';
import { silentLogger, type Logger, type SnapshotManifest, type SnapshotStorage, type SnapshotUploadState } from '@ramify/core';
import { join } from 'node:path';
import { isValidSnapshotId, LocalSnapshotStorage, type OpenSnapshotOptions, type SnapshotVerification } from '../local-snapshot-storage.js';
import type { S3ChunkStore } from '../s3/s3-chunk-store.js';
import { collectChunks, type ChunkCollection } from './chunk-gc.js';
import { downloadSnapshot } from './download.js';
import { DownloadThreads } from './download-thread.js';
import { planEviction, type CachedImage } from './eviction.js';
import { allocatedBytes, TieredLocalState } from './local-state.js';
import { parseRemoteManifest } from './remote-manifest.js';
import { TransferQueue, type RetryOptions, type TransferKind } from './transfer-queue.js';
import { ChunkIndex, uploadSnapshot } from './upload.js';
import { DEFAULT_CHUNKING, type ChunkingParameters } from './chunker.js';

export interface TieredSnapshotStorageOptions {
  /** Local cache directory (holds `snapshots/`, as {@link LocalSnapshotStorage}). */
  rootDir: string;
  /** The bucket. */
  store: S3ChunkStore;
  /** Bytes of durable images kept locally before the least recently used are evicted; null (default): no limit. */
  cacheBudgetBytes?: number | null;
  /** Chunk sizes of uploads; default {@link DEFAULT_CHUNKING} (average 2 MiB). */
  chunking?: ChunkingParameters;
  /** Chunk requests in flight per upload or download; default 16 (the chunks held in memory: 32 MiB on average, 128 MiB at most). */
  parallelism?: number;
  /** Snapshots uploaded at once; default 2. */
  concurrentUploads?: number;
  /** Backoff of failed uploads and remote deletions (default 1 s doubling to 60 s). */
  retry?: RetryOptions;
  /** An opened image is not evicted for this long (a runtime may be restoring from it), ms; default 300,000. */
  openGraceMs?: number;
  /**
   * A downloaded image is sealed in the cache (fsynced, its manifest written) this long after its open
   * answered, ms; default 5,000. Sealing at once had the fsync of the whole image compete with the
   * runtime's restore from it; a resume removes its image soon after anyway (nothing to seal then), and
   * a crash before the seal only costs a download again (the image is in the bucket). {@link close}
   * seals at once.
   */
  sealDelayMs?: number;
  /**
   * Run downloads on threads of their own ({@link DownloadThreads}); default true. Needs a store whose
   * client was made from its options (`S3ChunkStore.ownClient`); otherwise downloads run on this thread.
   */
  downloadThreads?: boolean;
  /**
   * Each download thread runs the download path on a probe object (`probes/`, deleted after) when it
   * starts, so that the first real download is as fast as the next; default false (the daemon turns it on).
   */
  warmUpDownloads?: boolean;
  /** Verification of `open` on cached images (see {@link LocalSnapshotStorage}); default `sizes`. Downloads are always checked whole. */
  verifyOnOpen?: SnapshotVerification;
  logger?: Logger;
}

/** A download into the cache (see `TieredSnapshotStorage.download`). */
interface Download {
  /** The image's files exist at their full sizes (their bytes still arriving); rejects as `ready` when the download fails before. */
  prepared: Promise<{ imageDir: string; manifest: SnapshotManifest }>;
  /** The image is written and checked. */
  ready: Promise<{ imageDir: string; manifest: SnapshotManifest }>;
  /** Sealed in the cache, or dropped unsealed; never rejects once `ready` resolved. */
  done: Promise<void>;
  /** Seal now instead of after the delay. */
  seal: () => void;
  /** Do not seal (the image is about to be removed). */
  unseal: () => void;
}

export class TieredSnapshotStorage implements SnapshotStorage {
  readonly local: LocalSnapshotStorage;
  readonly store: S3ChunkStore;
  private readonly state: TieredLocalState;
  private readonly queue: TransferQueue;
  private readonly logger: Logger;
  private readonly chunking: ChunkingParameters;
  private readonly parallelism: number;
  private readonly openGraceMs: number;
  private readonly sealDelayMs: number;
  private readonly cacheBudgetBytes: number | null;
  /** Chunks seen in the bucket by this process (uploads skip them without a HEAD). */
  private readonly chunks = new ChunkIndex();
  /** Downloads by snapshot: `ready` once the image is written and checked, `done` once it is fsynced and sealed in the cache. */
  private readonly downloads = new Map<string, Download>();
  /** Last open per snapshot (epoch ms), for the eviction grace. */
  private readonly openedAt = new Map<string, number>();
  private eviction: Promise<void> | null = null;
  private evictAgain = false;
  /** Where downloads run; null: on this thread. */
  private readonly downloadThreads: DownloadThreads | null;

  constructor(options: TieredSnapshotStorageOptions) {
    this.local = new LocalSnapshotStorage({ rootDir: options.rootDir, ...(options.verifyOnOpen ? { verifyOnOpen: options.verifyOnOpen } : {}) });
    this.store = options.store;
    this.state = new TieredLocalState(options.rootDir);
    this.logger = options.logger ?? silentLogger;
    this.chunking = options.chunking ?? DEFAULT_CHUNKING;
    this.parallelism = options.parallelism ?? 16;
    this.openGraceMs = options.openGraceMs ?? 300_000;
    this.sealDelayMs = options.sealDelayMs ?? 5_000;
    this.cacheBudgetBytes = options.cacheBudgetBytes ?? null;
    this.downloadThreads = options.downloadThreads !== false && this.store.ownClient ? new DownloadThreads(this.store.options, { warmUp: options.warmUpDownloads ?? false }) : null;
    this.queue = new TransferQueue({ concurrency: options.concurrentUploads ?? 2, retry: options.retry, logger: this.logger, run: (kind, id, signal) => this.transfer(kind, id, signal), onDone: () => this.scheduleEviction() });
  }

  /**
   * Queue what a previous process left undone: uploads of cached images without a durable marker,
   * remote deletions of removed ones. Lists the bucket's chunks in the background (uploads skip those;
   * a failed listing only costs PUTs of chunks the bucket has).
   */
  async start(): Promise<void> {
    // Their modules and S3 clients load now, on their own threads, not inside the first cold resume.
    this.downloadThreads?.start();
    void this.listKnownChunks();
    for (const snapshotId of await this.state.removals()) this.queue.enqueue('delete', snapshotId);
    for (const snapshotId of await this.local.list()) {
      if (!(await this.state.marker(snapshotId))) this.queue.enqueue('upload', snapshotId);
    }
    this.scheduleEviction();
  }

  /** A fresh image directory (see {@link LocalSnapshotStorage.prepare}); a pending removal of the same id is dropped (the new upload replaces its manifest). */
  async prepare(snapshotId: string): Promise<{ imageDir: string }> {
    if (isValidSnapshotId(snapshotId) && (await this.state.isRemoved(snapshotId))) {
      await this.queue.cancel(snapshotId);
      await this.state.clearRemoval(snapshotId);
    }
    return this.local.prepare(snapshotId);
  }

  /** Seal the image locally (see {@link LocalSnapshotStorage.commit}) and queue its upload; resolves before the upload. */
  async commit(input: Omit<SnapshotManifest, 'formatVersion' | 'sizeBytes' | 'files' | 'createdAt'>): Promise<SnapshotManifest> {
    const manifest = await this.local.commit(input);
    this.queue.enqueue('upload', manifest.snapshotId);
    return manifest;
  }

  /**
   * The image, downloaded into the cache first when this host does not hold it.
   * Rejects `SNAPSHOT_NOT_FOUND` (neither here nor in the bucket, or removed), `RUNTIME_ERROR` for a
   * corrupt image (`details.reason`; nothing is left in the cache), `STORAGE_UNAVAILABLE` when it is
   * not cached and the bucket cannot be read.
   */
  async open(snapshotId: string, options: OpenSnapshotOptions = {}): Promise<{ imageDir: string; manifest: SnapshotManifest }> {
    const cached = await this.openCached(snapshotId, options);
    if (cached) return cached;
    const opened = await this.downloadOf(snapshotId).ready;
    this.openedAt.set(snapshotId, Date.now());
    return opened;
  }

  /**
   * {@link open}, but an image that is not cached is answered once its files exist at their full sizes,
   * with `arriving` (resolves once every byte is written and checked; rejects with the download's error,
   * its directory removed): a runtime starts its instance meanwhile and reads the image only after
   * (docs/design/STORAGE.md, "Restore while the image arrives"). Rejects as {@link open}.
   */
  async openArriving(snapshotId: string): Promise<{ imageDir: string; manifest: SnapshotManifest; arriving?: Promise<void> }> {
    const cached = await this.openCached(snapshotId, {});
    if (cached) return cached;
    const download = this.downloadOf(snapshotId);
    const prepared = await download.prepared;
    const arriving = download.ready.then(() => void this.openedAt.set(snapshotId, Date.now()));
    arriving.catch(() => undefined); // the caller awaits it; a caller that failed before must not leave it unhandled
    return { ...prepared, arriving };
  }

  /** The cached image (touched), or null when this host does not hold it. Rejects `SNAPSHOT_NOT_FOUND` for a removed or invalid id. */
  private async openCached(snapshotId: string, options: OpenSnapshotOptions): Promise<{ imageDir: string; manifest: SnapshotManifest } | null> {
    if (!isValidSnapshotId(snapshotId) || (await this.state.isRemoved(snapshotId))) throw notFound('SNAPSHOT_NOT_FOUND', 'snapshot', snapshotId);
    this.openedAt.set(snapshotId, Date.now());
    try {
      const opened = await this.local.open(snapshotId, options);
      await this.state.touch(snapshotId);
      return opened;
    } catch (error) {
      if (!(error instanceof RamifyError && error.code === 'SNAPSHOT_NOT_FOUND')) throw error;
      return null;
    }
  }

  /** The download of `snapshotId` running now, or a new one. */
  private downloadOf(snapshotId: string): Download {
    let download = this.downloads.get(snapshotId);
    if (!download) {
      const started = this.download(snapshotId);
      download = started;
      this.downloads.set(snapshotId, started);
      void started.done.catch(() => undefined).finally(() => {
        if (this.downloads.get(snapshotId) === started) this.downloads.delete(snapshotId);
      });
    }
    return download;
  }

  /**
   * Remove the snapshot here and from the bucket. The removal is recorded locally first (fsynced);
   * the remote manifest is deleted in the background, retried while the bucket is unreachable. Its
   * chunks go with {@link collectGarbage}.
   */
  async remove(snapshotId: string): Promise<void> {
    if (!isValidSnapshotId(snapshotId)) return;
    await this.state.addRemoval(snapshotId);
    await this.queue.cancel(snapshotId);
    const download = this.downloads.get(snapshotId);
    download?.unseal();
    await download?.done.catch(() => undefined);
    await this.local.remove(snapshotId);
    this.openedAt.delete(snapshotId);
    this.queue.enqueue('delete', snapshotId);
  }

  /** Ids of committed snapshots here or in the bucket, sorted. Rejects `STORAGE_UNAVAILABLE` when the bucket cannot be listed. */
  async list(): Promise<string[]> {
    const removed = new Set(await this.state.removals());
    const ids = new Set([...(await this.local.list()), ...(await this.store.listManifestIds())]);
    return [...ids].filter((id) => !removed.has(id)).sort();
  }

  /** Where `snapshotId` stands (see {@link SnapshotUploadState}). Rejects `SNAPSHOT_NOT_FOUND`; `STORAGE_UNAVAILABLE` when only the bucket could tell. */
  async uploadState(snapshotId: string): Promise<SnapshotUploadState> {
    if (!isValidSnapshotId(snapshotId) || (await this.state.isRemoved(snapshotId))) throw notFound('SNAPSHOT_NOT_FOUND', 'snapshot', snapshotId);
    const job = this.queue.state(snapshotId);
    const failures = { failedAttempts: job?.failedAttempts ?? 0, lastError: job?.lastError ?? null };
    if (job?.kind === 'upload') return { state: job.phase === 'running' ? 'uploading' : 'pending', ...failures, durableAt: null };
    if ((await this.local.list()).includes(snapshotId)) {
      const marker = await this.state.marker(snapshotId);
      return marker ? { state: 'durable', failedAttempts: 0, lastError: null, durableAt: marker.durableAt } : { state: 'pending', ...failures, durableAt: null };
    }
    const writtenAt = await this.store.manifestWrittenAt(snapshotId);
    if (!writtenAt) throw notFound('SNAPSHOT_NOT_FOUND', 'snapshot', snapshotId);
    return { state: 'durable', failedAttempts: 0, lastError: null, durableAt: writtenAt.toISOString() };
  }

  /**
   * Delete chunks no manifest lists that are older than `olderThanMs` (default 24 h: uploads on other
   * hosts store chunks before their manifest). Skipped (null) while this host has transfers queued.
   */
  async collectGarbage(options: { olderThanMs?: number } = {}): Promise<ChunkCollection | null> {
    if (this.queue.size > 0) return null;
    const collected = await collectChunks(this.store, { olderThanMs: options.olderThanMs ?? 86_400_000 });
    this.chunks.forget(collected.deleted);
    return collected;
  }

  /** Bytes of images cached locally, and the budget. */
  async cacheUsage(): Promise<{ cachedBytes: number; budgetBytes: number | null }> {
    const images = await this.cachedImages();
    return { cachedBytes: images.reduce((sum, image) => sum + image.bytes, 0), budgetBytes: this.cacheBudgetBytes };
  }

  /** Resolves once no upload or remote deletion is queued or running (benches, tests); may never resolve while the bucket is unreachable. */
  async whenIdle(pollMs = 50): Promise<void> {
    while (this.queue.size > 0) await new Promise((resolve) => setTimeout(resolve, pollMs));
  }

  /** Stop background work (running uploads are aborted and resume at the next {@link start}); waits for it. */
  async close(): Promise<void> {
    await this.queue.close();
    for (const download of this.downloads.values()) download.seal();
    await Promise.allSettled([...this.downloads.values()].map((download) => download.done));
    await this.eviction;
    await this.local.settle();
    await this.downloadThreads?.close();
  }

  private async listKnownChunks(): Promise<void> {
    try {
      for await (const chunk of this.store.listChunks()) this.chunks.add(chunk.sha256, chunk.lastModified.getTime());
    } catch (error) {
      this.logger.warn('snapshot storage: listing the bucket\'s chunks failed (uploads store every chunk they do not know)', { error: (error as Error).message });
    }
  }

  private async transfer(kind: TransferKind, snapshotId: string, signal: AbortSignal): Promise<void> {
    if (kind === 'delete') {
      await this.store.deleteManifest(snapshotId);
      await this.state.clearRemoval(snapshotId);
      return;
    }
    if (await this.state.marker(snapshotId)) return;
    const { imageDir, manifest } = await this.local.open(snapshotId, { verify: 'none' }).catch((error: unknown) => {
      if (error instanceof RamifyError && error.code === 'SNAPSHOT_NOT_FOUND') return { imageDir: null, manifest: null };
      throw error;
    });
    if (!imageDir) return; // removed meanwhile
    const started = Date.now();
    const result = await uploadSnapshot({ store: this.store, imageDir, manifest, chunking: this.chunking, parallelism: this.parallelism, chunks: this.chunks, signal });
    signal.throwIfAborted();
    await this.state.markDurable(snapshotId, { durableAt: result.manifest.uploadedAt, storedBytes: result.storedBytes, chunks: result.chunks, newChunks: result.newChunks });
    this.logger.info('snapshot durable', { snapshotId, sizeBytes: manifest.sizeBytes, storedBytes: result.storedBytes, chunks: result.chunks, newChunks: result.newChunks, uploadMs: Date.now() - started });
  }

  /**
   * Download `snapshotId` into the cache. `ready` resolves once every file is written and checked
   * (the runtime may restore from the page cache at once); `done` once the files are fsynced and the
   * manifest and durable marker written, `sealDelayMs` later (or at once after `seal()`), or once the
   * image is dropped unsealed after `unseal()` (a remove is coming). A crash before the seal leaves no
   * manifest: the next open downloads again.
   */
  private download(snapshotId: string): Download {
    const started = performance.now();
    const phases = { manifestMs: 0, readyMs: 0 };
    let onPrepared: (at: { imageDir: string; manifest: SnapshotManifest }) => void = () => undefined;
    const prepared = new Promise<{ imageDir: string; manifest: SnapshotManifest }>((resolve) => (onPrepared = resolve));
    const written = (async () => {
      const text = await this.store.getManifest(snapshotId);
      if (text === null) throw notFound('SNAPSHOT_NOT_FOUND', 'snapshot', snapshotId);
      const remote = parseRemoteManifest(text, snapshotId);
      phases.manifestMs = Math.round(performance.now() - started);
      const { imageDir } = await this.local.prepare(snapshotId);
      try {
        const onFiles = (): void => onPrepared({ imageDir, manifest: remote.snapshot });
        if (this.downloadThreads) await this.downloadThreads.run({ manifest: remote, imageDir, parallelism: this.parallelism, onSeen: (sha256) => this.chunks.add(sha256), onPrepared: onFiles });
        else await downloadSnapshot({ store: this.store, manifest: remote, imageDir, parallelism: this.parallelism, chunks: this.chunks, onPrepared: onFiles });
      } catch (error) {
        await this.local.remove(snapshotId).catch(() => undefined);
        throw error;
      }
      phases.readyMs = Math.round(performance.now() - started);
      this.logger.info('snapshot download written and checked', { snapshotId, sizeBytes: remote.snapshot.sizeBytes, ...phases });
      return { imageDir, remote };
    })();
    let decide: (seal: boolean) => void = () => undefined;
    const decided = new Promise<boolean>((resolve) => (decide = resolve));
    const done = written.then(async ({ remote }) => {
      const timer = setTimeout(() => decide(true), this.sealDelayMs);
      const seal = await decided;
      clearTimeout(timer);
      if (!seal) return;
      try {
        await this.local.adopt(remote.snapshot);
        await this.state.markDurable(snapshotId, { durableAt: remote.uploadedAt, storedBytes: 0, chunks: Object.values(remote.files).reduce((n, f) => n + f.chunks.length, 0), newChunks: 0 });
      } catch (error) {
        this.logger.warn('snapshot storage: sealing a downloaded image failed; it will be downloaded again', { snapshotId, error: (error as Error).message });
        await this.local.remove(snapshotId).catch(() => undefined);
        return;
      }
      // readyMs: the open answered (written and checked); sealMs: fsynced and its manifest written.
      this.logger.info('snapshot downloaded', { snapshotId, sizeBytes: remote.snapshot.sizeBytes, ...phases, sealMs: Math.round(performance.now() - started) });
      this.scheduleEviction();
    });
    const ready = written.then(({ imageDir, remote }) => ({ imageDir, manifest: remote.snapshot }));
    // Settles with the files, or with the failure that came before them (then it is `ready`'s rejection).
    const preparedOrFailed = Promise.race([prepared, ready]);
    preparedOrFailed.catch(() => undefined);
    return { prepared: preparedOrFailed, ready, done, seal: () => decide(true), unseal: () => decide(false) };
  }

  /** Run an eviction pass soon (one at a time; a request during a pass runs another after it). */
  private scheduleEviction(): void {
    if (this.cacheBudgetBytes === null) return;
    if (this.eviction) {
      this.evictAgain = true;
      return;
    }
    this.eviction = (async () => {
      do {
        this.evictAgain = false;
        await this.evict().catch((error: unknown) => this.logger.warn('snapshot cache eviction failed', { error: (error as Error).message }));
      } while (this.evictAgain);
    })().finally(() => (this.eviction = null));
  }

  private async evict(): Promise<void> {
    const plan = planEviction(await this.cachedImages(), this.cacheBudgetBytes ?? Infinity);
    for (const snapshotId of plan.evict) {
      // Checked again right before: an open or a transfer may have started during the plan.
      if (this.isBusy(snapshotId) || !(await this.state.marker(snapshotId))) continue;
      await this.local.remove(snapshotId);
      this.logger.info('snapshot evicted from the local cache', { snapshotId });
    }
  }

  private isBusy(snapshotId: string): boolean {
    const opened = this.openedAt.get(snapshotId);
    return this.queue.state(snapshotId) !== undefined || this.downloads.has(snapshotId) || (opened !== undefined && Date.now() - opened < this.openGraceMs);
  }

  private async cachedImages(): Promise<CachedImage[]> {
    const images: CachedImage[] = [];
    for (const snapshotId of await this.local.list()) {
      const bytes = await allocatedBytes(join(this.local.rootDir, 'snapshots', snapshotId));
      images.push({ snapshotId, bytes, lastUsedMs: await this.state.lastUsedMs(snapshotId), inUse: this.isBusy(snapshotId) });
    }
    return images;
  }
}
