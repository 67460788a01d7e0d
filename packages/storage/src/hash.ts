/**
 * Streaming file hashing with bounded concurrency. Checkpoint images can be hundreds of MB, so files
 * are read in 1 MiB chunks through a sha256 stream and never held in memory whole.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { availableParallelism } from 'node:os';
import { pipeline } from 'node:stream/promises';

/** Bytes read per chunk while hashing. */
const READ_CHUNK_BYTES = 1 << 20;

/** sha256 of a file's bytes as lowercase hex, streamed. Rejects with the fs error (e.g. `ENOENT`), or `AbortError` once `signal` aborts. */
export async function sha256File(path: string, signal?: AbortSignal): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path, { highWaterMark: READ_CHUNK_BYTES }), hash, ...(signal ? [{ signal }] : []));
  return hash.digest('hex');
}

/** Default number of files hashed at once: hashing is CPU-bound, so at most one per core, capped at 4. */
export function defaultHashConcurrency(): number {
  return Math.max(1, Math.min(4, availableParallelism()));
}

/**
 * Run `task` over `items` with at most `concurrency` in flight; results keep the input order.
 * The first rejection rejects the whole call (tasks already started still run to completion).
 */
export async function mapBounded<T, R>(items: readonly T[], concurrency: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index]);
    }
  };
  const workers = Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker);
  await Promise.all(workers);
  return results;
}
