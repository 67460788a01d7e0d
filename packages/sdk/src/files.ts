/**
 * `sandbox.files`: the sandbox's filesystem. Reads and writes stream (a large file is never held in
 * memory by the SDK); metadata calls are JSON.
 */
import { Readable } from 'node:stream';
import type { FileInfo } from '@ramify/contracts';
import type { ApiClient } from './http.js';
import { NotFoundError, RamifyError } from './errors.js';

/** What {@link Files.write} accepts. Streams (web `ReadableStream`, Node `Readable`, any async iterable of bytes) are uploaded as they are read. */
export type WriteData = string | Uint8Array | ArrayBuffer | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/** `format` of {@link Files.read}. */
export type ReadFormat = 'text' | 'bytes' | 'stream';

/** Options of {@link Files.read}. */
export interface ReadOpts<F extends ReadFormat = ReadFormat> {
  /** `text` (UTF-8 decoded, default), `bytes` (`Uint8Array`), or `stream` (a web `ReadableStream<Uint8Array>`). */
  format?: F;
}

/** Filesystem of one sandbox (`sandbox.files`). Paths are absolute paths inside the sandbox. */
export class Files {
  /** @internal Use `sandbox.files`. */
  constructor(private readonly api: ApiClient, private readonly sandboxId: string) {}

  private path(rest: string): string {
    return `/sandboxes/${encodeURIComponent(this.sandboxId)}/files${rest}`;
  }

  /**
   * Read a file. Throws `FILE_NOT_FOUND` (a {@link NotFoundError}) or `IS_A_DIRECTORY`. With
   * `format: 'stream'` the body is not buffered: consume or cancel the stream.
   */
  read(path: string, opts?: ReadOpts<'text'>): Promise<string>;
  read(path: string, opts: ReadOpts<'bytes'>): Promise<Uint8Array>;
  read(path: string, opts: ReadOpts<'stream'>): Promise<ReadableStream<Uint8Array>>;
  async read(path: string, opts: ReadOpts = {}): Promise<string | Uint8Array | ReadableStream<Uint8Array>> {
    const res = await this.api.request('GET', this.path(''), { query: { path } });
    const format = opts.format ?? 'text';
    if (format === 'text') return res.text();
    if (format === 'bytes') return new Uint8Array(await res.arrayBuffer());
    return res.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() });
  }

  /**
   * Write a file (parent directories are created; an existing file is replaced atomically). Streams are
   * uploaded chunk by chunk with no request deadline. Returns the new file's info.
   */
  async write(path: string, data: WriteData): Promise<FileInfo> {
    const streamed = !(typeof data === 'string' || data instanceof Uint8Array || data instanceof ArrayBuffer);
    const body = typeof data === 'string' ? new TextEncoder().encode(data)
      : data instanceof Uint8Array ? data
        : data instanceof ArrayBuffer ? new Uint8Array(data)
          : data instanceof ReadableStream ? data
            : (Readable.toWeb(Readable.from(data)) as unknown as ReadableStream<Uint8Array>);
    return this.api.json<FileInfo>('PUT', this.path(''), { query: { path }, body, ...(streamed ? { timeoutMs: 0 } : {}) });
  }

  /** List a directory; `depth` > 1 descends (max 16). Throws `FILE_NOT_FOUND`, `NOT_A_DIRECTORY`. */
  async list(path: string, opts: { depth?: number } = {}): Promise<FileInfo[]> {
    const res = await this.api.json<{ entries: FileInfo[] }>('GET', this.path('/list'), { query: { path, depth: opts.depth } });
    return res.entries;
  }

  /** Stat a path (symlinks are not followed). Throws `FILE_NOT_FOUND`. */
  getInfo(path: string): Promise<FileInfo> {
    return this.api.json<FileInfo>('GET', this.path('/stat'), { query: { path } });
  }

  /** True when `path` exists. */
  async exists(path: string): Promise<boolean> {
    try {
      await this.getInfo(path);
      return true;
    } catch (err) {
      if (err instanceof NotFoundError && err.code === 'FILE_NOT_FOUND') return false;
      throw err;
    }
  }

  /** Create a directory and its parents. Resolves false if it already existed. */
  async makeDir(path: string): Promise<boolean> {
    try {
      await this.api.json<FileInfo>('POST', this.path('/mkdir'), { json: { path } });
      return true;
    } catch (err) {
      if (err instanceof RamifyError && err.code === 'FILE_EXISTS') return false;
      throw err;
    }
  }

  /** Remove a file or a directory tree. Throws `FILE_NOT_FOUND`. */
  remove(path: string): Promise<void> {
    return this.api.empty('POST', this.path('/remove'), { json: { path } });
  }

  /** Move/rename. Returns the info at the new path. */
  rename(oldPath: string, newPath: string): Promise<FileInfo> {
    return this.api.json<FileInfo>('POST', this.path('/rename'), { json: { from: oldPath, to: newPath } });
  }
}
