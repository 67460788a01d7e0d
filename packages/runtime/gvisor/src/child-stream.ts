/**
 * A Duplex over a child process's stdin/stdout: writes go to its stdin, its stdout is readable.
 * Destroying the stream kills the child; the child exiting ends the stream. Unlike `Duplex.from`,
 * a plain `destroy()` does not surface an AbortError.
 */
import type { ChildProcess } from 'node:child_process';
import { Duplex } from 'node:stream';

export class ChildStream extends Duplex {
  constructor(private readonly child: ChildProcess) {
    super();
    const out = child.stdout!;
    out.on('data', (chunk: Buffer) => {
      if (!this.push(chunk)) out.pause();
    });
    out.on('end', () => this.push(null));
    child.stdin!.on('error', (e) => this.destroy(e));
    // 'close' fires after the child exited and its stdio closed, so buffered stdout was pushed first.
    child.on('close', () => this.destroy());
  }

  override _read(): void {
    this.child.stdout!.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    this.child.stdin!.write(chunk, cb);
  }

  override _final(cb: (e?: Error | null) => void): void {
    this.child.stdin!.end(cb);
  }

  override _destroy(err: Error | null, cb: (e?: Error | null) => void): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    cb(err);
  }
}
