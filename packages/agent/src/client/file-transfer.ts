/**
 * Client side of file transfers over the agent protocol. Downloads grant the agent credit as the
 * consumer takes chunks; uploads send only what the agent granted. Either way at most one credit window
 * (`STREAM_WINDOW_BYTES`) is buffered, whatever the file size.
 */
import type { FileInfo } from '@ramify/contracts';
import { ChunkQueue } from '../protocol/chunk-queue.js';
import { CreditGate, StreamClosedError } from '../protocol/credit.js';
import { MAX_DATA_CHUNK_BYTES, STREAM_WINDOW_BYTES, type ClientMessage, type MethodName, type ParamsOf, type ResultOf } from '../protocol/messages.js';
import { toWireError } from '../protocol/wire-errors.js';

/** The parts of an `AgentClient` that transfers use. */
export interface TransferChannel {
  request<M extends MethodName>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>>;
  /** Write a frame now; false when the channel is closed or its buffer is full. */
  send(message: ClientMessage): boolean;
  /** Write a frame, then wait until the channel drained if its buffer is full. */
  sendWhenWritable(message: ClientMessage): Promise<void>;
  allocateId(): number;
  /** Open downloads by stream id; the client routes `data`/`end` frames here. */
  readonly downloads: Map<number, ChunkQueue>;
  /** Open uploads by stream id; the client routes `credit`/`cancel` frames here. */
  readonly uploads: Map<number, CreditGate>;
}

/**
 * Stream a file's bytes. Nothing is requested until iteration starts; breaking out early cancels the
 * transfer on the agent. Throws the agent's RamifyError (FILE_NOT_FOUND, IS_A_DIRECTORY, ...).
 */
export function download(ch: TransferChannel, path: string): AsyncIterable<Uint8Array> {
  return {
    async *[Symbol.asyncIterator]() {
      const sid = ch.allocateId();
      let consumed = 0;
      const queue = new ChunkQueue((bytes) => {
        consumed += bytes;
        if (consumed >= STREAM_WINDOW_BYTES / 4) {
          ch.send({ t: 'credit', sid, n: consumed });
          consumed = 0;
        }
      });
      ch.downloads.set(sid, queue);
      let finished = false;
      try {
        await ch.request('readFile', { path, sid, window: STREAM_WINDOW_BYTES });
        yield* queue;
        finished = true;
      } finally {
        ch.downloads.delete(sid);
        if (!finished) ch.send({ t: 'cancel', sid });
      }
    },
  };
}

/**
 * Upload `data` to `path` (atomically replaced on the agent). If `data` throws, the upload is aborted
 * (the old file stays) and that error is rethrown; otherwise agent errors are RamifyErrors.
 */
export async function upload(ch: TransferChannel, path: string, data: AsyncIterable<Uint8Array>, mode: number | undefined): Promise<FileInfo> {
  const sid = ch.allocateId();
  const gate = new CreditGate(0);
  ch.uploads.set(sid, gate);
  const response = ch.request('writeFile', { path, sid, mode });
  response.catch((err: Error) => gate.close(err.message));
  let sourceError: unknown;
  const sending = (async () => {
    try {
      await gate.opened();
      for await (const chunk of data) {
        for (let off = 0; off < chunk.byteLength; ) {
          const n = await gate.acquire(Math.min(MAX_DATA_CHUNK_BYTES, chunk.byteLength - off));
          await ch.sendWhenWritable({ t: 'data', sid, data: chunk.subarray(off, off + n) });
          off += n;
        }
      }
      ch.send({ t: 'end', sid });
    } catch (err) {
      if (err instanceof StreamClosedError) return; // The response carries the reason.
      sourceError = err;
      ch.send({ t: 'end', sid, e: toWireError(err) });
    }
  })();
  try {
    const info = await response;
    await sending;
    return info;
  } catch (err) {
    await sending;
    throw sourceError ?? err;
  } finally {
    gate.close('upload finished');
    ch.uploads.delete(sid);
  }
}
