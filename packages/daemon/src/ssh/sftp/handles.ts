/**
 * Open SFTP handles over the agent's whole-file streams. The agent reads and writes files front to back
 * (a download is one stream, an upload one stream renamed into place when it ends), which is how
 * `sftp get/put` and `scp` move files: READs and WRITEs at increasing offsets, many in flight. So a read
 * handle serves READs from one download stream, keeping a window of what it served for re-reads; a write
 * handle feeds one upload stream in offset order (WRITEs that arrive early wait, bounded) and the file
 * appears, whole, at CLOSE. Writing over an existing file without truncating it (OpenSSH >= 8.x's `put`
 * and `scp` do so, then set the size) keeps the original's bytes past the last one written, copied into
 * the upload at CLOSE; APPEND copies the original first. Seeking back past the window, writing a range
 * twice, or leaving a gap fails with a message saying so.
 */
import { PassThrough } from 'node:stream';
import { RamifyError, type FileAttributes, type FileInfo } from '@ramify/contracts';
import type { FileEntry } from 'ssh2';

/** Bytes a read handle keeps behind the furthest byte it served, for a client reading a range again. */
export const READ_KEEP_BEHIND = 8 << 20;
/** Bytes of an upload buffered towards the agent before WRITE answers wait (the client's requests in flight stall). */
export const WRITE_HIGH_WATER = 4 << 20;
/** Bytes of WRITEs ahead of the next expected offset a write handle holds at most. */
export const WRITE_EARLY_MAX = 16 << 20;

/** A file opened for reading: its stat at open and one download stream. */
export class ReadHandle {
  readonly kind = 'read';
  readonly #iterator: AsyncIterator<Uint8Array>;
  readonly #chunks: Buffer[] = [];
  /** File offset of `#chunks[0]`'s first byte, and one past the last buffered byte. */
  #start = 0;
  #end = 0;
  #done = false;
  #pulling: Promise<void> | null = null;

  constructor(readonly path: string, readonly info: FileInfo, source: AsyncIterable<Uint8Array>) {
    this.#iterator = source[Symbol.asyncIterator]();
  }

  /**
   * Bytes `offset` to `offset + length` (fewer only at the end of the file); null at or past the end.
   * @throws RamifyError BAD_REQUEST when `offset` is behind what is kept; the stream's errors.
   */
  async read(offset: number, length: number): Promise<Buffer | null> {
    if (offset < this.#start) {
      throw new RamifyError('BAD_REQUEST', `reads of ${this.path} go front to back: offset ${offset} is behind the ${READ_KEEP_BEHIND} bytes kept (at ${this.#start})`);
    }
    while (this.#end < offset + length && !this.#done) await this.#pull();
    if (offset >= this.#end) return null;
    const out = this.#slice(offset, Math.min(offset + length, this.#end));
    this.#trim(offset + out.length - READ_KEEP_BEHIND);
    return out;
  }

  /** Stop the download (at CLOSE, or when the channel goes). */
  async close(): Promise<void> {
    this.#done = true;
    await this.#iterator.return?.().catch(() => undefined);
  }

  /** One more chunk from the stream; concurrent callers share one pull. */
  #pull(): Promise<void> {
    this.#pulling ??= this.#iterator.next().then((r) => {
      if (r.done) this.#done = true;
      else {
        this.#chunks.push(Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength));
        this.#end += r.value.byteLength;
      }
    }).finally(() => {
      this.#pulling = null;
    });
    return this.#pulling;
  }

  #slice(from: number, to: number): Buffer {
    const parts: Buffer[] = [];
    let at = this.#start;
    for (const chunk of this.#chunks) {
      const chunkEnd = at + chunk.length;
      if (chunkEnd > from && at < to) parts.push(chunk.subarray(Math.max(from - at, 0), Math.min(to - at, chunk.length)));
      at = chunkEnd;
      if (at >= to) break;
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  /** Drop whole chunks that end at or before `offset`. */
  #trim(offset: number): void {
    while (this.#chunks.length > 0 && this.#start + this.#chunks[0]!.length <= offset) this.#start += this.#chunks.shift()!.length;
  }
}

/** A file opened for writing: one upload stream, fed in offset order; the file appears at {@link close}. */
export class WriteHandle {
  readonly kind = 'write';
  readonly #stream = new PassThrough({ highWaterMark: WRITE_HIGH_WATER });
  readonly #result: Promise<FileInfo>;
  /** Settles (never rejects) when the upload ended either way. */
  readonly #ended: Promise<void>;
  readonly #early = new Map<number, Buffer>();
  #earlyBytes = 0;
  #next = 0;
  #failure: unknown = null;
  #drain: Promise<void> | null = null;
  /** Attributes asked for while open (FSETSTAT), applied once the file is in place. */
  readonly afterClose: FileAttributes = {};

  /**
   * @param upload starts the agent's upload of `path` from the given stream.
   * @param original the file being written over (not truncated): its size and a reader of its bytes.
   */
  constructor(
    readonly path: string,
    upload: (data: AsyncIterable<Uint8Array>) => Promise<FileInfo>,
    private readonly original: { size: number; read(): Promise<AsyncIterable<Uint8Array>> } | null = null,
  ) {
    // Errors reach the upload through its iterator; this listener keeps a late one from being unhandled.
    this.#stream.on('error', () => undefined);
    this.#result = upload(this.#stream);
    this.#ended = this.#result.then(
      () => undefined,
      (err: unknown) => {
        this.#failure ??= err;
        this.#stream.destroy();
      },
    );
  }

  /** Bytes written in order so far (the size the file will have). */
  get size(): number {
    return this.#next;
  }

  /**
   * Take `data` at `offset`. Resolves once it is queued towards the agent under the high-water mark.
   * @throws RamifyError BAD_REQUEST for a range written already or too far ahead; the upload's error.
   */
  async write(offset: number, data: Buffer): Promise<void> {
    if (this.#failure) throw this.#failure;
    if (offset < this.#next || this.#early.has(offset)) {
      throw new RamifyError('BAD_REQUEST', `writes to ${this.path} go front to back: offset ${offset} was written already (next is ${this.#next})`);
    }
    if (offset > this.#next) {
      if (this.#earlyBytes + data.length > WRITE_EARLY_MAX) throw new RamifyError('BAD_REQUEST', `writes to ${this.path} go front to back: offset ${offset} is too far ahead of ${this.#next}`);
      this.#early.set(offset, Buffer.from(data));
      this.#earlyBytes += data.length;
      return;
    }
    this.#push(data);
    for (let next = this.#early.get(this.#next); next; next = this.#early.get(this.#next)) {
      this.#early.delete(this.#next);
      this.#earlyBytes -= next.length;
      this.#push(next);
    }
    if (this.#stream.writableNeedDrain) await Promise.race([this.#drained(), this.#ended]);
    if (this.#failure) throw this.#failure;
  }

  /** Resolves when the stream drains or closes; WRITEs waiting at once share one wait. */
  #drained(): Promise<void> {
    this.#drain ??= new Promise<void>((resolve) => {
      const done = (): void => {
        this.#stream.off('drain', done).off('close', done);
        this.#drain = null;
        resolve();
      };
      this.#stream.on('drain', done).on('close', done);
    });
    return this.#drain;
  }

  /** APPEND: the original's bytes go first, so WRITEs continue at its end. */
  async appendToOriginal(): Promise<void> {
    if (this.original && this.#next === 0) await this.#copyOriginal(0);
  }

  /**
   * End the upload: the file is renamed into place whole. Written over an original that was longer, its
   * bytes past the last one written follow (unless a size asked for meanwhile cuts them off anyway).
   * @throws RamifyError BAD_REQUEST when a gap is left (WRITEs beyond one never written); the upload's error.
   */
  async close(): Promise<FileInfo> {
    if (this.#early.size > 0) {
      this.abort(new RamifyError('BAD_REQUEST', `${this.path} has a gap at offset ${this.#next}: nothing was written there; the file was not written`));
      throw this.#failure;
    }
    const cutTo = this.afterClose.size;
    if (this.original && this.#next < this.original.size && !(cutTo !== undefined && cutTo <= this.#next)) await this.#copyOriginal(this.#next);
    this.#stream.end();
    return this.#result;
  }

  /** Feed the original file's bytes from offset `from` to its end into the upload, with backpressure. */
  async #copyOriginal(from: number): Promise<void> {
    if (!this.original) return;
    let at = 0;
    for await (const chunk of await this.original.read()) {
      const end = at + chunk.byteLength;
      if (end > from) {
        this.#push(Buffer.from(chunk.subarray(Math.max(0, from - at))));
        if (this.#stream.writableNeedDrain) await Promise.race([this.#drained(), this.#ended]);
        if (this.#failure) throw this.#failure;
      }
      at = end;
    }
  }

  /** Give up: the upload fails and the file is left as it was. */
  abort(reason: Error): void {
    this.#failure ??= reason;
    this.#stream.destroy(reason);
  }

  #push(data: Buffer): void {
    this.#stream.write(data);
    this.#next += data.length;
  }
}

/** A directory listed at OPENDIR: READDIR hands it out in batches, then EOF. */
export class DirHandle {
  readonly kind = 'dir';
  #at = 0;
  constructor(readonly path: string, private readonly entries: FileEntry[]) {}

  /** The next batch, or null when all were given. */
  next(batch = 100): FileEntry[] | null {
    if (this.#at >= this.entries.length) return null;
    const out = this.entries.slice(this.#at, this.#at + batch);
    this.#at += out.length;
    return out;
  }
}

export type SftpHandle = ReadHandle | WriteHandle | DirHandle;
