/** Messages between {@link DownloadThread} (main thread) and its worker (download-worker.ts). */
import { RamifyError, type ErrorCode } from '@ramify/contracts';
import type { S3ConnectionOptions } from '../s3/s3-connection.js';
import type { RemoteManifest } from './remote-manifest.js';

/** What the worker is started with. */
export interface DownloadWorkerData {
  connection: S3ConnectionOptions;
  /** Run the download path on a probe object at start (download-worker.ts, `warmUp`). */
  warmUp: boolean;
}

export type ToDownloadWorker =
  /**
   * Fetch the manifest's chunks into files the main thread prepared, with the other threads: `share.next`
   * is the index of the next chunk to take (on a SharedArrayBuffer; download.ts, `share`).
   */
  | { kind: 'download'; id: number; manifest: RemoteManifest; imageDir: string; parallelism: number; share: { next: Int32Array } }
  | { kind: 'cancel'; id: number };

export type FromDownloadWorker =
  /** Started; `warmedUp`: its warm-up ran to the end. */
  | { kind: 'ready'; warmedUp: boolean }
  /** `seen`: the chunks found in the bucket (the main thread's chunk index learns them). */
  | { kind: 'done'; id: number; bytes: number; seen: string[] }
  | { kind: 'failed'; id: number; error: WireError; seen: string[] };

/** An error as it crosses threads: a RamifyError keeps its code and details. */
export interface WireError {
  message: string;
  code?: ErrorCode;
  details?: Record<string, unknown>;
}

/** `error` as it can cross to the main thread (structured clone keeps no class). */
export function errorToWire(error: unknown): WireError {
  if (error instanceof RamifyError) return { message: error.message, code: error.code, ...(error.details ? { details: error.details } : {}) };
  return { message: error instanceof Error ? error.message : String(error) };
}

/** The error again on the main thread: a `RamifyError` with its code and details, else a plain `Error`. */
export function errorFromWire(wire: WireError): Error {
  return wire.code ? new RamifyError(wire.code, wire.message, wire.details) : new Error(wire.message);
}
