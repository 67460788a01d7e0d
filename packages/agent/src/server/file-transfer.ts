/**
 * Streaming file transfer on the agent side. Reads are sent in chunks as the client grants credit;
 * writes go to a temporary file in the target's directory (created with its parents) that is renamed
 * over the target once every byte arrived, so readers never see a half-written file. Memory use is
 * bounded by the credit window, whatever the file size.
 */
import { randomBytes } from 'node:crypto';
import { chmod, chown, lstat, mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { RamifyError, type FileInfo } from '@ramify/contracts';
import { ChunkQueue } from '../protocol/chunk-queue.js';
import { CreditGate, StreamClosedError } from '../protocol/credit.js';
import { MAX_DATA_CHUNK_BYTES, STREAM_WINDOW_BYTES } from '../protocol/messages.js';
import { toWireError } from '../protocol/wire-errors.js';
import { fsError, statPath } from './files.js';
import type { FrameSink, StreamRegistry } from './stream-registry.js';

/**
 * Open `path` for streaming on stream `sid`; resolves with its size, then sends the bytes in the
 * background (`data` frames, then `end`, or `end` with an error).
 * @throws RamifyError FILE_NOT_FOUND, IS_A_DIRECTORY, NOT_A_DIRECTORY, FORBIDDEN.
 */
export async function sendFile(path: string, sid: number, window: number, sink: FrameSink, streams: StreamRegistry): Promise<{ size: number }> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (err) {
    throw fsError(err, path);
  }
  const st = await fh.stat();
  if (st.isDirectory()) {
    await fh.close();
    throw new RamifyError('IS_A_DIRECTORY', `is a directory: ${path}`, { path });
  }
  const gate = new CreditGate(window > 0 ? window : STREAM_WINDOW_BYTES);
  streams.register(sid, { onCredit: (n) => gate.grant(n), onClose: (reason) => gate.close(reason) });
  setImmediate(() => void pump(fh, sid, gate, sink, streams, path));
  return { size: st.size };
}

async function pump(fh: FileHandle, sid: number, gate: CreditGate, sink: FrameSink, streams: StreamRegistry, path: string): Promise<void> {
  const buf = Buffer.allocUnsafe(MAX_DATA_CHUNK_BYTES);
  try {
    for (;;) {
      const n = await gate.acquire(MAX_DATA_CHUNK_BYTES);
      const { bytesRead } = await fh.read(buf, 0, n, null);
      if (bytesRead < n) gate.grant(n - bytesRead);
      if (bytesRead === 0) break;
      sink.send({ t: 'data', sid, data: buf.subarray(0, bytesRead) });
      await sink.writable();
    }
    sink.send({ t: 'end', sid });
  } catch (err) {
    if (!(err instanceof StreamClosedError)) sink.send({ t: 'end', sid, e: toWireError(fsError(err, path)) });
  } finally {
    streams.delete(sid);
    await fh.close().catch(() => undefined);
  }
}

/** Where an upload comes from and what it may take. */
export interface UploadStream {
  sid: number;
  /** Mode of the new file; default the replaced file's, else 0o644. */
  mode?: number;
  sink: FrameSink;
  streams: StreamRegistry;
  /**
   * Whether `bytes` more of file data fit in the sandbox, asked before each chunk is written (gVisor keeps
   * files in the sandbox's memory, and the OOM guard cannot stop the agent); absent: the filesystem decides.
   */
  roomForFiles?: (bytes: number) => boolean;
}

/**
 * Receive `stream` into `path` atomically. Resolves with the new file's info once it is in place; the
 * replaced file's owner is kept.
 * @throws RamifyError IS_A_DIRECTORY, NOT_A_DIRECTORY, FORBIDDEN, NO_SPACE (the disk is full, or
 *   `roomForFiles` said no: nothing is left of the upload), or the sender's error if it aborted.
 */
export async function receiveFile(path: string, stream: UploadStream): Promise<FileInfo> {
  const { sid, mode, sink, streams, roomForFiles } = stream;
  const existing = await lstat(path).catch(() => undefined);
  if (existing?.isDirectory()) throw new RamifyError('IS_A_DIRECTORY', `is a directory: ${path}`, { path });
  const dir = dirname(path);
  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    throw fsError(err, dir);
  }
  const tmp = join(dir, `.${basename(path)}.ramify-${randomBytes(6).toString('hex')}.tmp`);
  const finalMode = mode ?? (existing ? existing.mode & 0o7777 : 0o644);
  let fh: FileHandle;
  try {
    fh = await open(tmp, 'wx', finalMode);
  } catch (err) {
    throw fsError(err, path);
  }
  let unacked = 0;
  const queue = new ChunkQueue((bytes) => {
    unacked += bytes;
    if (unacked >= STREAM_WINDOW_BYTES / 4) {
      sink.send({ t: 'credit', sid, n: unacked });
      unacked = 0;
    }
  });
  streams.register(sid, {
    onData: (data) => queue.push(data),
    onEnd: (error) => queue.end(error),
    onClose: (reason) => queue.end(new RamifyError('AGENT_UNREACHABLE', `upload of ${path} aborted: ${reason}`, { path })),
  });
  sink.send({ t: 'credit', sid, n: STREAM_WINDOW_BYTES });
  try {
    for await (const chunk of queue) {
      if (roomForFiles && !roomForFiles(chunk.byteLength)) {
        throw new RamifyError('NO_SPACE', `no room for ${path}: the sandbox's memory, where its files live, is nearly full (delete files or use a larger memoryMB)`, { path });
      }
      let off = 0;
      while (off < chunk.byteLength) {
        const { bytesWritten } = await fh.write(chunk, off, chunk.byteLength - off);
        off += bytesWritten;
      }
    }
    await fh.close();
    await chmod(tmp, finalMode); // open()'s mode was subject to the umask.
    if (existing) await chown(tmp, existing.uid, existing.gid).catch(() => undefined);
    await rename(tmp, path);
  } catch (err) {
    await fh.close().catch(() => undefined);
    await unlink(tmp).catch(() => undefined);
    if (err instanceof RamifyError) throw err;
    throw fsError(err, path);
  } finally {
    streams.delete(sid);
  }
  return statPath(path);
}
