/**
 * The master side of a pseudo-terminal as one output stream and one input stream, robust to gVisor's
 * spurious end of file.
 *
 * Linux never answers a read of a terminal master with 0 bytes: it blocks (or EAGAIN) while the
 * terminal is open, and fails with EIO once every holder of the other side closed it. gVisor's devpts
 * (runsc 20240729) does answer 0 now and then once the sandbox has been restored from a checkpoint,
 * even on terminals opened after the restore and while the program is writing (measured: a bash at its
 * prompt, or just started, went silent after a read of 0; docs/design/TERMINALS.md). libuv takes a read
 * of 0 for the end of the stream, and a `tty.ReadStream` then closes the master: the terminal was
 * lost, its later output and all input with it. So the master is read through a stream that leaves
 * the fd open at EOF (see `char-device-stream.ts`), and an EOF only restarts the reading on the same
 * fd; the output ends on EIO (the real end) or when the owner calls {@link TerminalMaster.close}.
 */
import type { Socket } from 'node:net';
import { PassThrough, Writable } from 'node:stream';
import { continueCharDeviceStream, openCharDeviceStream } from './char-device-stream.js';

/** Consecutive spurious EOFs tolerated at full speed; beyond this each restart waits (ms, capped). */
const EOF_BACKOFF_AFTER = 16;
const EOF_BACKOFF_MAX_MS = 50;

export class TerminalMaster {
  /** What the program writes to its terminal; ends at EIO or {@link close}. */
  readonly output = new PassThrough();
  /** Typing: bytes written here reach the program's terminal input. */
  readonly input: Writable;
  private socket: Socket;
  private closed = false;
  private eofs = 0;

  /** Takes ownership of `fd` (an open master; switched to non-blocking). @throws Error when it cannot be polled. */
  constructor(fd: number) {
    this.socket = openCharDeviceStream(fd);
    this.input = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        if (this.closed) done(new Error('the terminal is closed'));
        else this.socket.write(chunk, (err) => done(err ?? undefined));
      },
      destroy: (err, done) => {
        this.close();
        done(err);
      },
    });
    this.input.on('error', () => undefined);
    this.output.on('drain', () => this.socket.resume());
    this.attach(this.socket);
  }

  /** Stop reading, close the master and end {@link output}. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.destroy();
    this.output.end();
    if (!this.input.destroyed) this.input.destroy();
  }

  private attach(socket: Socket): void {
    socket.on('data', (chunk: Buffer) => {
      this.eofs = 0;
      if (!this.output.write(chunk)) socket.pause();
    });
    socket.on('error', () => this.close()); // EIO: every holder of the terminal closed it.
    socket.on('end', () => this.restart(socket));
  }

  /** A read of 0 bytes: not the end of a terminal (see the module comment). Read on from the same fd. */
  private restart(ended: Socket): void {
    if (this.closed || ended !== this.socket) return;
    this.eofs++;
    const next = (): void => {
      if (this.closed || ended !== this.socket) return;
      // The fd changes hands only with no write pending on it (typing goes on through `ended` meanwhile).
      if (ended.writableLength > 0) {
        ended.once('drain', next);
        return;
      }
      try {
        this.socket = continueCharDeviceStream(ended);
      } catch {
        this.close();
        return;
      }
      this.attach(this.socket);
    };
    if (this.eofs <= EOF_BACKOFF_AFTER) setImmediate(next);
    else setTimeout(next, Math.min(EOF_BACKOFF_MAX_MS, this.eofs - EOF_BACKOFF_AFTER));
  }
}
