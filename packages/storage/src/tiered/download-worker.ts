/**
 * A download thread's entry: the `node:worker_threads` Worker that each of {@link DownloadThreads} starts.
 * It owns an S3 client of its own (made from the connection options it was started with) and runs
 * {@link downloadSnapshot} on its share of each image's chunks, so that the chunks' bytes are received,
 * hashed, decompressed and written on this thread's event loop and collected by this thread's small heap
 * (docs/design/STORAGE.md, "Downloads on a thread of their own").
 */
import { parentPort, workerData } from 'node:worker_threads';
import { S3ChunkStore } from '../s3/s3-chunk-store.js';
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
post({ kind: 'ready' });
