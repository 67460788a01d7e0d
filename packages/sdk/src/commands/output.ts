/**
 * Where a process's output goes on the client: byte offsets per stream (for resuming a dropped
 * stream), streaming UTF-8 decoding (a character split across frames is decoded once it is whole),
 * the accumulated text, and the caller's callbacks.
 */
import type { StreamOffsets } from '@ramify/contracts';

/**
 * Output callbacks. Text callbacks get decoded strings (never a broken multi-byte character); byte
 * callbacks get the exact bytes as received, for binary output. Both may be given.
 */
export interface OutputCallbacks {
  /** Decoded stdout text, in order. */
  onStdout?: (data: string) => void;
  /** Decoded stderr text, in order. */
  onStderr?: (data: string) => void;
  /** Raw stdout bytes, in order. Do not keep a reference past the call without copying. */
  onStdoutBytes?: (chunk: Uint8Array) => void;
  /** Raw stderr bytes, in order. Do not keep a reference past the call without copying. */
  onStderrBytes?: (chunk: Uint8Array) => void;
}

/** Accumulates one process's output and tracks how many bytes of each stream have arrived. */
export class OutputSink {
  readonly offsets: StreamOffsets;
  stdout = '';
  stderr = '';
  /** The first error a callback threw (output keeps flowing; `wait()` rejects with it). */
  callbackError: unknown;
  private readonly decoders = { stdout: new TextDecoder('utf-8'), stderr: new TextDecoder('utf-8') };

  constructor(private readonly callbacks: OutputCallbacks, from: StreamOffsets = { stdout: 0, stderr: 0 }) {
    this.offsets = { ...from };
  }

  /** Take one chunk of `channel`. */
  push(channel: 'stdout' | 'stderr', bytes: Uint8Array): void {
    if (bytes.byteLength === 0) return;
    this.offsets[channel] += bytes.byteLength;
    const text = this.decoders[channel].decode(bytes, { stream: true });
    if (channel === 'stdout') {
      this.stdout += text;
      this.call(this.callbacks.onStdoutBytes, bytes);
      if (text) this.call(this.callbacks.onStdout, text);
    } else {
      this.stderr += text;
      this.call(this.callbacks.onStderrBytes, bytes);
      if (text) this.call(this.callbacks.onStderr, text);
    }
  }

  /** Flush the decoders at end of stream (an incomplete trailing character becomes U+FFFD). */
  finish(): void {
    const out = this.decoders.stdout.decode();
    const err = this.decoders.stderr.decode();
    if (out) { this.stdout += out; this.call(this.callbacks.onStdout, out); }
    if (err) { this.stderr += err; this.call(this.callbacks.onStderr, err); }
  }

  private call<T>(fn: ((value: T) => void) | undefined, value: T): void {
    if (!fn) return;
    try { fn(value); } catch (err) { this.callbackError ??= err; }
  }
}
