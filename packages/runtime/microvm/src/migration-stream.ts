/**
 * Moving QEMU's migration stream between a file and QEMU over a unix socket, so no shell is involved
 * (QEMU 7.2 rejects `file:` URIs and `exec:` would run `sh -c`). Outgoing: this process listens, QEMU
 * connects (`migrate unix:<path>`) and the bytes go to a file. Incoming: QEMU listens
 * (`migrate-incoming unix:<path>`) and this process streams the file in.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { RamifyError } from '@ramify/contracts';

export interface StreamSink {
  /** The URI to give QEMU's `migrate`. */
  uri: string;
  /** Resolves once one connection's bytes are all in the file (fsynced); rejects on a stream error. */
  written: Promise<void>;
  close(): Promise<void>;
}

/** Listen on `socketPath` and write the first connection's bytes to `filePath`. */
export async function sinkToFile(socketPath: string, filePath: string): Promise<StreamSink> {
  await rm(socketPath, { force: true });
  let server: Server;
  const written = new Promise<void>((resolve, reject) => {
    server = createServer((socket) => {
      server.close();
      const out = createWriteStream(filePath, { flush: true });
      pipeline(socket, out).then(resolve, (e: Error) => reject(new RamifyError('RUNTIME_ERROR', `writing ${filePath} failed: ${e.message}`)));
    });
    server.on('error', reject);
  });
  await new Promise<void>((resolve, reject) => {
    server!.once('error', reject);
    server!.listen(socketPath, resolve);
  });
  written.catch(() => undefined);
  return {
    uri: `unix:${socketPath}`,
    written,
    close: async () => {
      server.close();
      await rm(socketPath, { force: true });
    },
  };
}

/** Errors that only say QEMU closed its end while bytes were still going out. */
const PEER_CLOSED = new Set(['ERR_STREAM_PREMATURE_CLOSE', 'EPIPE', 'ECONNRESET']);

/**
 * Stream `filePath` into the unix socket QEMU listens on after `migrate-incoming unix:<socketPath>`,
 * retrying the connection for up to `timeoutMs`. Resolves once every byte was handed to the socket, or
 * once QEMU closed its end (it stops reading at the stream's end marker, possibly before our last write
 * completes, and also when the load fails): the caller learns which from QMP (`waitForMigration`).
 */
export async function streamFileTo(socketPath: string, filePath: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let connected = false;
    try {
      const socket = await new Promise<ReturnType<typeof connect>>((resolve, reject) => {
        const s = connect(socketPath);
        s.once('connect', () => resolve(s));
        s.once('error', reject);
      });
      connected = true;
      await pipeline(createReadStream(filePath), socket);
      return;
    } catch (err) {
      if (connected && PEER_CLOSED.has((err as NodeJS.ErrnoException).code ?? '')) return;
      const code = (err as NodeJS.ErrnoException).code;
      if ((code !== 'ENOENT' && code !== 'ECONNREFUSED') || Date.now() > deadline) {
        throw new RamifyError('RUNTIME_ERROR', `streaming ${filePath} to QEMU failed: ${(err as Error).message}`);
      }
      await sleep(10);
    }
  }
}
