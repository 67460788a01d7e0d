/**
 * `sandbox.files`: the sandbox's filesystem. Reads and writes stream (a large file is never held in
 * memory by the SDK); metadata calls are JSON. Bytes stay bytes: a text read of content that is not
 * UTF-8 throws {@link NotUtf8Error} rather than replacing anything with U+FFFD.
 */
import { ROUTES } from '@ramify/contracts/client';
import type { FileInfo } from '@ramify/contracts';
import type { ApiClient } from './http.js';
import { NotFoundError, NotUtf8Error, RamifyError, type ConnectionError } from './errors.js';
import { WatchHandle, type FilesystemEvent, type WatchOpts } from './watch.js';

/**
 * What {@link Files.write} accepts. A string is written as UTF-8. A `Blob` (e.g. `fs.openAsBlob(path)`,
 * file-backed) and streams (web `ReadableStream`, Node `Readable` such as `fs.createReadStream(path)`,
 * any async iterable of bytes) are uploaded as they are read, so client memory stays bounded whatever
 * the size.
 */
export type WriteData = string | Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/** `format` of {@link Files.read}. */
export type ReadFormat = 'text' | 'bytes' | 'stream';

/** Options of {@link Files.read}. */
export interface ReadOpts<F extends ReadFormat = ReadFormat> {
  /**
   * `text` (default): the content decoded as UTF-8, strictly (invalid UTF-8 throws {@link NotUtf8Error};
   * a leading BOM is dropped, as `Response.text()` does); `bytes`: the exact bytes (`Uint8Array`);
   * `stream`: the exact bytes as a web `ReadableStream<Uint8Array>`, not buffered.
   */
  format?: F;
}

/** Fatal: invalid UTF-8 throws instead of decoding to U+FFFD. Stateless between `decode()` calls without `stream`. */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * `bytes` as UTF-8 text.
 * @throws NotUtf8Error (`NOT_UTF8`) when `bytes` is not valid UTF-8; the message names `format: 'bytes'`.
 */
function decodeText(bytes: Uint8Array, path: string): string {
  try {
    return strictUtf8.decode(bytes);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    throw new NotUtf8Error(
      `${path} is not valid UTF-8 text (${bytes.byteLength} bytes); read it with files.read(path, { format: 'bytes' }) (or format: 'stream') for its exact bytes`,
      { path, size: bytes.byteLength },
    );
  }
}

/** A streamed upload's body, and the error its source threw, if it did. */
interface WatchedStream {
  stream: ReadableStream<Uint8Array>;
  /** Set once the source threw: `fetch` reports that as a network failure, which it is not. */
  failure(): { error: unknown } | undefined;
}

/** `source` read chunk by chunk on demand (nothing queued ahead), remembering the error it throws. */
function watched(source: AsyncIterable<Uint8Array>): WatchedStream {
  const chunks = source[Symbol.asyncIterator]();
  let failure: { error: unknown } | undefined;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await chunks.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      } catch (error) {
        failure = { error };
        controller.error(error);
      }
    },
    cancel: async () => { await chunks.return?.(); },
  }, { highWaterMark: 0 });
  return { stream, failure: () => failure };
}

/** The request body for `data`: bytes as they are, a Blob (streamed by fetch), or a watched stream. */
function uploadBody(data: WriteData): Uint8Array | Blob | WatchedStream {
  if (typeof data === 'string') return new TextEncoder().encode(data);
  if (data instanceof Uint8Array || data instanceof Blob) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return watched(data); // A web ReadableStream is an async iterable too (its iterator's return() cancels it).
}

/** Filesystem of one sandbox (`sandbox.files`). Paths are absolute paths inside the sandbox. */
export class Files {
  /** @internal Use `sandbox.files`. */
  constructor(private readonly api: ApiClient, private readonly sandboxId: string) {}


  /**
   * Read a file: as UTF-8 text (default), as its exact bytes (`format: 'bytes'`), or as a stream of its
   * exact bytes (`format: 'stream'`: not buffered; consume or cancel it). Text and bytes are held whole.
   * @throws NotFoundError `FILE_NOT_FOUND`; RamifyError `IS_A_DIRECTORY`;
   *   {@link NotUtf8Error} `NOT_UTF8` for a text read of content that is not valid UTF-8.
   */
  read(path: string, opts?: ReadOpts<'text'>): Promise<string>;
  read(path: string, opts: ReadOpts<'bytes'>): Promise<Uint8Array>;
  read(path: string, opts: ReadOpts<'stream'>): Promise<ReadableStream<Uint8Array>>;
  async read(path: string, opts: ReadOpts = {}): Promise<string | Uint8Array | ReadableStream<Uint8Array>> {
    const res = await this.api.at(ROUTES.readFile, { id: this.sandboxId }).request({ query: { path } });
    const format = opts.format ?? 'text';
    if (format === 'text') return decodeText(new Uint8Array(await res.arrayBuffer()), path);
    if (format === 'bytes') return new Uint8Array(await res.arrayBuffer());
    return res.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() });
  }

  /**
   * Write a file (parent directories are created; an existing file is replaced atomically, so readers
   * never see half of it). Blobs and streams are uploaded chunk by chunk as they are read (client memory
   * stays bounded) with no request deadline; if a stream errors, the upload is aborted and the old file
   * stays. Returns the new file's info (`size` in bytes).
   * @throws RamifyError `IS_A_DIRECTORY`, `NOT_A_DIRECTORY`, `FORBIDDEN` (from the sandbox); a stream's
   *   own error when the stream throws (not a {@link ConnectionError}).
   */
  async write(path: string, data: WriteData): Promise<FileInfo> {
    const body = uploadBody(data);
    if (body instanceof Uint8Array) return this.api.at(ROUTES.writeFile, { id: this.sandboxId }).json<FileInfo>({ query: { path }, body });
    const streamed = body instanceof Blob ? body : body.stream;
    try {
      return await this.api.at(ROUTES.writeFile, { id: this.sandboxId }).json<FileInfo>({ query: { path }, body: streamed, timeoutMs: 0 });
    } catch (err) {
      const failure = body instanceof Blob ? undefined : body.failure();
      throw failure ? failure.error : err;
    }
  }

  /** List a directory; `depth` > 1 descends (max 16). Throws `FILE_NOT_FOUND`, `NOT_A_DIRECTORY`. */
  async list(path: string, opts: { depth?: number } = {}): Promise<FileInfo[]> {
    const res = await this.api.at(ROUTES.listFiles, { id: this.sandboxId }).json<{ entries: FileInfo[] }>({ query: { path, depth: opts.depth } });
    return res.entries;
  }

  /** Stat a path (symlinks are not followed). Throws `FILE_NOT_FOUND`. */
  getInfo(path: string): Promise<FileInfo> {
    return this.api.at(ROUTES.statFile, { id: this.sandboxId }).json<FileInfo>({ query: { path } });
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
      await this.api.at(ROUTES.makeDir, { id: this.sandboxId }).json<FileInfo>({ json: { path } });
      return true;
    } catch (err) {
      if (err instanceof RamifyError && err.code === 'FILE_EXISTS') return false;
      throw err;
    }
  }

  /** Remove a file or a directory tree. Throws `FILE_NOT_FOUND`. */
  remove(path: string): Promise<void> {
    return this.api.at(ROUTES.removeFile, { id: this.sandboxId }).empty({ json: { path } });
  }

  /** Move/rename. Returns the info at the new path. */
  rename(oldPath: string, newPath: string): Promise<FileInfo> {
    return this.api.at(ROUTES.renameFile, { id: this.sandboxId }).json<FileInfo>({ json: { from: oldPath, to: newPath } });
  }

  /**
   * Watch a directory: `onEvent` gets each change (`create`, `write`, `remove`, `rename` (the old name;
   * the new one follows as `create`), `chmod`) in the order the sandbox's kernel reported them, `name`
   * relative to `path`. Resolves once watching (every later change is reported). Survives pause/resume:
   * changes made while the stream was down arrive after the resume; `opts.onOverflow` says where some
   * may be missing. Throws `FILE_NOT_FOUND`, `NOT_A_DIRECTORY` (a file), `WATCH_UNAVAILABLE` (a template
   * built before watching: rebuild it), `INVALID_STATE` (paused).
   */
  watchDir(path: string, onEvent: (event: FilesystemEvent) => void | Promise<void>, opts: WatchOpts = {}): Promise<WatchHandle> {
    return new WatchHandle({ api: this.api, sandboxId: this.sandboxId, onEvent, opts }).start(path);
  }
}
