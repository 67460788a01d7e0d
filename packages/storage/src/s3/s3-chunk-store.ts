/**
 * The remote half of tiered snapshot storage: content-addressed chunks and snapshot manifests in an
 * S3-compatible bucket. Layout under the configured prefix:
 * ```
 * chunks/<sha256[0:2]>/<sha256>   one chunk: its uncompressed bytes' sha256 names it; brotli or raw
 *                                 (object metadata `ramify-encoding`: `br` or `identity`)
 * manifests/<snapshotId>.json     a snapshot's remote manifest (written last: present = durable)
 * ```
 * Chunks are immutable and shared by every manifest that lists them, so an image's chunks that its
 * parent, its forks or its template already stored are not stored again.
 */
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { RamifyError } from '@ramify/contracts';
import { createHash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { promisify } from 'node:util';
import { brotliCompress, brotliDecompress, constants as zlibConstants } from 'node:zlib';
import pLimit from 'p-limit';
import { createS3Client, s3ErrorOf, s3Unavailable, type S3ConnectionOptions } from './s3-connection.js';

const compress = promisify(brotliCompress);
const decompress = promisify(brotliDecompress);

/** Brotli quality 1: measured on this project's 2-core machine at ~60 MB/s on microVM RAM (to 24 %) and ~100 MB/s on gVisor images (already flate-compressed by runsc: stored raw). */
const BROTLI_QUALITY = 1;
/** A chunk is stored raw unless brotli makes it at least this much smaller (gVisor images barely shrink). */
const MIN_COMPRESSED_RATIO = 0.97;
/** Bytes of a chunk compressed first as a sample: when they do not shrink by 10 %, the chunk is stored raw without compressing the rest. */
const SAMPLE_BYTES = 64 * 1024;
const ENCODING_KEY = 'ramify-encoding';
/**
 * Brotli jobs (compressions and decompressions) run at once in this process, at most: one per core, at
 * most 2. They run on libuv's thread pool (4 threads), which the file reads of the chunker, the writes of
 * a download and every other fs call share: 16 chunk uploads compressing at once kept the upload's own
 * reads queued behind them (STORAGE.md, "Compression"), for no gain on 2 cores.
 */
const brotliJobs = pLimit(Math.max(1, Math.min(2, availableParallelism())));

/** One listed chunk object. */
export interface StoredChunk {
  sha256: string;
  /** Bytes stored (compressed). */
  storedBytes: number;
  lastModified: Date;
}

export class S3ChunkStore {
  readonly client: S3Client;
  readonly options: S3ConnectionOptions;
  private readonly prefix: string;

  /** True when {@link client} was made from {@link options} (so another thread can make the same one). */
  readonly ownClient: boolean;

  /** `client` defaults to one made from `options` ({@link createS3Client}). */
  constructor(options: S3ConnectionOptions, client?: S3Client) {
    this.options = options;
    this.client = client ?? createS3Client(options);
    this.ownClient = client === undefined;
    this.prefix = options.prefix ?? '';
  }

  /** Object key of chunk `sha256`. */
  chunkKey(sha256: string): string {
    return `${this.prefix}chunks/${sha256.slice(0, 2)}/${sha256}`;
  }

  /** Object key of `snapshotId`'s manifest. */
  manifestKey(snapshotId: string): string {
    return `${this.prefix}manifests/${snapshotId}.json`;
  }

  /**
   * Store one chunk (`data`: its uncompressed bytes, whose sha256 is `sha256`), compressed with brotli
   * when that saves at least 3 %, at `key` (default its chunk key). @returns the bytes stored.
   * @throws RamifyError STORAGE_UNAVAILABLE.
   */
  async putChunk(sha256: string, data: Buffer, signal?: AbortSignal, key = this.chunkKey(sha256)): Promise<number> {
    const packed = await compressIfWorth(data);
    const [body, encoding] = packed && packed.length < data.length * MIN_COMPRESSED_RATIO ? [packed, 'br'] : [data, 'identity'];
    await this.call('store a chunk', () =>
      this.client.send(new PutObjectCommand({ Bucket: this.options.bucket, Key: key, Body: body, ContentLength: body.length, Metadata: { [ENCODING_KEY]: encoding } }), { abortSignal: signal }),
    );
    return body.length;
  }

  /**
   * Fetch chunk `sha256` and check it: decompressed, it must be `sizeBytes` long with that sha256.
   * @throws RamifyError `RUNTIME_ERROR` (`details.reason`: `missing-chunk`, `checksum-mismatch`) when the
   *   chunk is gone or its bytes do not match; `STORAGE_UNAVAILABLE` when the bucket cannot be read.
   */
  async getChunk(sha256: string, sizeBytes: number, signal?: AbortSignal): Promise<Buffer> {
    const parts = await this.getChunkParts(sha256, sizeBytes, signal);
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts, sizeBytes);
  }

  /** {@link getChunk}'s bytes as the parts they arrived in (in order; `sizeBytes` in all), from `key` (default its chunk key). Same errors. */
  async getChunkParts(sha256: string, sizeBytes: number, signal?: AbortSignal, key = this.chunkKey(sha256)): Promise<Buffer[]> {
    const parts: Buffer[] = [];
    await this.getChunkInto(sha256, sizeBytes, (part) => void parts.push(part), signal, key);
    return parts;
  }

  /**
   * {@link getChunk}'s bytes handed to `sink` as they arrive (`at`: the part's offset in the chunk; a
   * compressed chunk comes as one part once decompressed), so that none is held longer than a socket
   * read: a download that kept each chunk whole until its end held up to `parallelism` chunks of up to
   * 8 MiB, and its collections were a third of its CPU (docs/design/STORAGE.md, "Streaming writes").
   * The check comes at the end: when it throws, `sink` has been given bytes that are not the chunk's and
   * the caller must discard them (a download removes its image directory). Same errors as {@link getChunk}.
   */
  async getChunkInto(sha256: string, sizeBytes: number, sink: (part: Buffer, at: number) => void, signal?: AbortSignal, key = this.chunkKey(sha256)): Promise<void> {
    // A raw chunk (most of a gVisor image) is hashed and handed on while it arrives; a compressed one once decompressed.
    const got = await this.get(key, signal, 'fetch a chunk', true, (part, at) => {
      if (at + part.length <= sizeBytes) sink(part, at); // past the end: corrupt, and the size check below says so
    });
    if (!got) throw new RamifyError('RUNTIME_ERROR', `chunk ${sha256} is missing from the bucket`, { reason: 'missing-chunk', chunk: sha256 });
    let length = got.length;
    let actual = got.sha256;
    if (got.encoding === 'br') {
      let data: Buffer;
      try {
        data = await brotliJobs(() => decompressChunk(got.parts, got.length, sizeBytes));
      } catch (error) {
        throw new RamifyError('RUNTIME_ERROR', `chunk ${sha256} in the bucket does not decompress (${(error as Error).message})`, { reason: 'checksum-mismatch', chunk: sha256 });
      }
      length = data.length;
      actual = createHash('sha256').update(data).digest('hex');
      if (actual === sha256 && length === sizeBytes) sink(data, 0);
    } else if (got.encoding !== 'identity') {
      // Another encoding's name on raw bytes (kept whole): the sha256 decides, as for any raw chunk.
      actual = got.parts.reduce((hash, part) => hash.update(part), createHash('sha256')).digest('hex');
      if (actual === sha256 && length === sizeBytes) got.parts.reduce((at, part) => (sink(part, at), at + part.length), 0);
    }
    if (actual !== sha256 || length !== sizeBytes) {
      throw new RamifyError('RUNTIME_ERROR', `chunk ${sha256} in the bucket is corrupt: ${length} bytes with sha256 ${actual}, expected ${sizeBytes} bytes`, { reason: 'checksum-mismatch', chunk: sha256 });
    }
  }

  /** Write `snapshotId`'s manifest (the commit point of an upload). @throws RamifyError STORAGE_UNAVAILABLE. */
  async putManifest(snapshotId: string, text: string, signal?: AbortSignal): Promise<void> {
    await this.call('write a manifest', () =>
      this.client.send(new PutObjectCommand({ Bucket: this.options.bucket, Key: this.manifestKey(snapshotId), Body: text, ContentType: 'application/json' }), { abortSignal: signal }),
    );
  }

  /** The text of `snapshotId`'s manifest, or null when there is none. @throws RamifyError STORAGE_UNAVAILABLE. */
  async getManifest(snapshotId: string, signal?: AbortSignal): Promise<string | null> {
    const got = await this.get(this.manifestKey(snapshotId), signal, 'read a manifest');
    return got ? Buffer.concat(got.parts, got.length).toString('utf8') : null;
  }

  /** When `snapshotId`'s manifest was written, or null when there is none. @throws RamifyError STORAGE_UNAVAILABLE. */
  async manifestWrittenAt(snapshotId: string): Promise<Date | null> {
    return this.head(this.manifestKey(snapshotId), undefined, 'look up a manifest');
  }

  /** Delete `snapshotId`'s manifest (its chunks stay until {@link deleteChunks}); a no-op when absent. @throws RamifyError STORAGE_UNAVAILABLE. */
  async deleteManifest(snapshotId: string): Promise<void> {
    await this.call('delete a manifest', () => this.client.send(new DeleteObjectCommand({ Bucket: this.options.bucket, Key: this.manifestKey(snapshotId) })));
  }

  /** Ids of every snapshot with a manifest, sorted. @throws RamifyError STORAGE_UNAVAILABLE. */
  async listManifestIds(): Promise<string[]> {
    const ids: string[] = [];
    for await (const object of this.listObjects(`${this.prefix}manifests/`)) {
      const name = object.key.slice(`${this.prefix}manifests/`.length);
      if (name.endsWith('.json')) ids.push(name.slice(0, -'.json'.length));
    }
    return ids.sort();
  }

  /** Every stored chunk. @throws RamifyError STORAGE_UNAVAILABLE. */
  async *listChunks(): AsyncGenerator<StoredChunk> {
    for await (const object of this.listObjects(`${this.prefix}chunks/`)) {
      const sha256 = object.key.slice(object.key.lastIndexOf('/') + 1);
      if (/^[0-9a-f]{64}$/.test(sha256)) yield { sha256, storedBytes: object.size, lastModified: object.lastModified };
    }
  }

  /** Delete chunks (1,000 per request). @throws RamifyError STORAGE_UNAVAILABLE. */
  async deleteChunks(sha256s: readonly string[]): Promise<void> {
    for (let i = 0; i < sha256s.length; i += 1000) {
      const Objects = sha256s.slice(i, i + 1000).map((sha) => ({ Key: this.chunkKey(sha) }));
      await this.call('delete chunks', () => this.client.send(new DeleteObjectsCommand({ Bucket: this.options.bucket, Delete: { Objects, Quiet: true } })));
    }
  }

  /** Bytes and objects stored under the prefix (chunks, manifests and all): what the bucket bills. @throws RamifyError STORAGE_UNAVAILABLE. */
  async usage(): Promise<{ objects: number; bytes: number }> {
    let objects = 0;
    let bytes = 0;
    for await (const object of this.listObjects(this.prefix)) {
      objects++;
      bytes += object.size;
    }
    return { objects, bytes };
  }

  private async *listObjects(prefix: string): AsyncGenerator<{ key: string; size: number; lastModified: Date }> {
    let ContinuationToken: string | undefined;
    do {
      const page = await this.call('list the bucket', () => this.client.send(new ListObjectsV2Command({ Bucket: this.options.bucket, Prefix: prefix, ContinuationToken })));
      for (const o of page.Contents ?? []) if (o.Key) yield { key: o.Key, size: o.Size ?? 0, lastModified: o.LastModified ?? new Date(0) };
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }

  /** LastModified of `key`, null when absent. */
  private async head(key: string, signal: AbortSignal | undefined, what: string): Promise<Date | null> {
    try {
      const answer = await this.client.send(new HeadObjectCommand({ Bucket: this.options.bucket, Key: key }), { abortSignal: signal });
      return answer.LastModified ?? new Date(0);
    } catch (error) {
      if (isNotFound(error)) return null;
      throw s3Unavailable(`could not ${what}`, this.options, error);
    }
  }

  /** Body and encoding of `key`, null when absent. */
  /**
   * The object's bytes and encoding, null when there is none. With `hashRaw`, a raw (`identity`) body is
   * hashed as its parts arrive (`sha256`, hex). The body comes as the parts it arrived in (`length`
   * bytes in all): a caller that writes them needs no copy of the object, and makes no 1 MiB garbage.
   */
  /**
   * GetObject `key`: its parts as they arrived, their length and encoding, and (`hashRaw`, when stored
   * raw) their sha256. With `onRaw`, a raw body's parts go to it as they arrive and are not kept
   * (`parts` is empty); a compressed body is kept whole as usual. Null when the object does not exist.
   */
  private async get(key: string, signal: AbortSignal | undefined, what: string, hashRaw = false, onRaw?: (part: Buffer, at: number) => void): Promise<{ parts: Buffer[]; length: number; encoding: string; sha256: string | null } | null> {
    try {
      const answer = await this.client.send(new GetObjectCommand({ Bucket: this.options.bucket, Key: key }), { abortSignal: signal });
      const encoding = answer.Metadata?.[ENCODING_KEY] ?? 'identity';
      const hash = hashRaw && encoding === 'identity' ? createHash('sha256') : null;
      const sink = encoding === 'identity' ? onRaw : undefined;
      const parts: Buffer[] = [];
      let length = 0;
      for await (const part of (answer.Body as AsyncIterable<Uint8Array> | undefined) ?? []) {
        const buffer = Buffer.isBuffer(part) ? part : Buffer.from(part.buffer, part.byteOffset, part.byteLength);
        hash?.update(buffer);
        if (sink) sink(buffer, length);
        else parts.push(buffer);
        length += buffer.length;
      }
      return { parts, length, encoding, sha256: hash?.digest('hex') ?? null };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw s3Unavailable(`could not ${what}`, this.options, error);
    }
  }

  private async call<T>(what: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      throw s3Unavailable(`could not ${what}`, this.options, error);
    }
  }
}

/**
 * A brotli body (`parts`, `length` bytes in all) decompressed, expecting `sizeBytes`. The output buffer
 * is one block of `sizeBytes + 1` bytes: with zlib's default 16 KiB blocks, each block was a round trip
 * to the thread pool and a callback on the main thread, and the blocks were copied together at the
 * end; in a cold resume inside the daemon that cost 200-500 ms of main-thread CPU for ~20 MB
 * (docs/design/STORAGE.md, "Where the time goes"). A body that inflates beyond `sizeBytes` stops at
 * `maxOutputLength` (rejects) or fails the caller's size check: either is a corrupt chunk.
 */
function decompressChunk(parts: Buffer[], length: number, sizeBytes: number): Promise<Buffer> {
  const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts, length);
  const block = Math.max(64, sizeBytes + 1);
  return decompress(body, { chunkSize: block, maxOutputLength: block });
}

/** `data` brotli-compressed, or null when a sample of it shows it will not shrink (random or already compressed bytes). */
async function compressIfWorth(data: Buffer): Promise<Buffer | null> {
  const brotli = (bytes: Buffer): Promise<Buffer> => brotliJobs(() => compress(bytes, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: bytes.length } }));
  if (data.length > 2 * SAMPLE_BYTES) {
    const start = Math.floor((data.length - SAMPLE_BYTES) / 2);
    const sample = data.subarray(start, start + SAMPLE_BYTES);
    if ((await brotli(sample)).length > SAMPLE_BYTES * 0.9) return null;
  }
  return brotli(data);
}

function isNotFound(error: unknown): boolean {
  const { code, status } = s3ErrorOf(error);
  return status === 404 && code !== 'NoSuchBucket';
}
