/**
 * A download thread's entry: the `node:worker_threads` Worker that each of {@link DownloadThreads} starts.
 * It owns an S3 client of its own (made from the connection options it was started with) and runs
 * {@link downloadSnapshot} on the chunks it takes from each image's shared queue, so that the chunks' bytes are received,
 * hashed, decompressed and written on this thread's event loop and collected by this thread's small heap
 * (docs/design/STORAGE.md, "Downloads on threads of their own"). It imports the full `@ramify/contracts`
 * on purpose: with its light entry the thread started ~150 ms of CPU cheaper but downloaded slower (STORAGE.md).
 */
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { S3ChunkStore } from '../s3/s3-chunk-store.js';
import { probeKey } from '../s3/s3-connection.js';
import type { DownloadWorkerData, FromDownloadWorker, ToDownloadWorker } from './download-protocol.js';
import { errorToWire } from './download-protocol.js';
import { downloadSnapshot } from './download.js';

const main = parentPort;
if (!main) throw new Error('download-worker.js runs as a worker thread (started by DownloadThreads)');
const data = workerData as DownloadWorkerData;
const store = new S3ChunkStore(data.connection);
const running = new Map<number, AbortController>();
const post = (message: FromDownloadWorker): void => main.postMessage(message);

main.on('message', (message: ToDownloadWorker) => {
  if (message.kind === 'cancel') {
    running.get(message.id)?.abort(new Error('download cancelled'));
    return;
  }
  const { id, manifest, imageDir, parallelism, share } = message;
  const controller = new AbortController();
  running.set(id, controller);
  const seen: string[] = [];
  downloadSnapshot({ store, manifest, imageDir, parallelism, share, chunks: { add: (sha256) => void seen.push(sha256) }, signal: controller.signal })
    .then(({ bytes }) => post({ kind: 'done', id, bytes, seen }))
    .catch((error: unknown) => post({ kind: 'failed', id, error: errorToWire(error), seen }))
    .finally(() => running.delete(id));
});
/**
 * Run the download path on a probe object before the first real download: a fresh thread's first
 * download took ~20 % longer than its next ones (measured on the cluster: 1,076-1,268 ms against 846-1,020
 * for the same image), its code cold and the SDK's lazy set-up still to do. One chunk of
 * {@link WARM_UP_BYTES} (half random, half compressible: both the raw and the brotli path) is stored under
 * `probes/`, fetched {@link WARM_UP_GETS} times (4 at once) and deleted: ~1 MB stored for a moment and
 * ~16 MB fetched per thread at start. Failures only mean no warm-up (the bucket may be down at start).
 */
async function warmUp(): Promise<void> {
  const bytes = Buffer.concat([randomBytes(WARM_UP_BYTES / 2), Buffer.alloc(WARM_UP_BYTES / 2, 'ramify download warm-up ')]);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const key = probeKey(store.options, 'warm-up-');
  try {
    await store.putChunk(sha256, bytes, undefined, key);
    let fetched = 0;
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (fetched++ < WARM_UP_GETS) await store.getChunkParts(sha256, bytes.length, undefined, key);
    }));
  } finally {
    await store.client.send(new DeleteObjectCommand({ Bucket: store.options.bucket, Key: key })).catch(() => undefined);
  }
}

const WARM_UP_BYTES = 1024 * 1024;
const WARM_UP_GETS = 16;

void (data.warmUp ? warmUp().then(() => true) : Promise.resolve(false)).catch(() => false).then((warmedUp) => post({ kind: 'ready', warmedUp }));
