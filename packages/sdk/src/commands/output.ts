/**
 * Where a process's output goes on the client: byte offsets per stream (for resuming a dropped
 * stream), streaming UTF-8 decoding (a character split across frames is decoded once it is whole),
 * the text kept for the result (the head of each stream, up to the daemon's limit), and the caller's
 * callbacks (every byte).
 */
import { DEFAULT_MAX_OUTPUT_BYTES, ResultCapture } from '@ramify/contracts/client';
import type { CapturedOutput, StreamOffsets } from '@ramify/contracts';

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

/**
 * Accumulates one process's output and tracks how many bytes of each stream have arrived. The callbacks
 * get every byte; the text kept for the result (`stdout`, `stderr`, {@link result}) is the head of each
 * stream, at most the daemon's `maxOutputBytes` (see `ResultCapture` in `@ramify/contracts`).
 */
export class OutputSink {
  readonly offsets: StreamOffsets;
  /** The first error a callback threw (output keeps flowing; `wait()` rejects with it). */
  callbackError: unknown;
  private capture: ResultCapture;
  /** Decoders of the text callbacks (the capture decodes its own head). */
  private readonly decoders = { stdout: new TextDecoder('utf-8'), stderr: new TextDecoder('utf-8') };

  /**
   * @param from byte offsets the output starts at (a re-attach); the capture counts from there.
   * @param maxOutputBytes bytes of each stream kept for the result until the daemon's `started` frame says its limit ({@link limitTo}).
   */
  constructor(private readonly callbacks: OutputCallbacks, from: StreamOffsets = { stdout: 0, stderr: 0 }, maxOutputBytes = DEFAULT_MAX_OUTPUT_BYTES) {
    this.offsets = { ...from };
    this.capture = new ResultCapture(maxOutputBytes);
  }

  /**
   * Keep at most `maxOutputBytes` bytes of each stream for the result (the daemon's limit, from its
   * `started` frame). Applies while nothing was captured yet: a daemon sends `started` first.
   */
  limitTo(maxOutputBytes: number): void {
    if (this.capture.stdout.totalBytes === 0 && this.capture.stderr.totalBytes === 0) this.capture = new ResultCapture(maxOutputBytes);
  }

  /** Stdout kept for the result so far (decoded; the head of the stream, see {@link result}). */
  get stdout(): string {
    return this.capture.stdout.text;
  }

  /** Stderr kept for the result so far. */
  get stderr(): string {
    return this.capture.stderr.text;
  }

  /** Take one chunk of `channel`. */
  push(channel: 'stdout' | 'stderr', bytes: Uint8Array): void {
    if (bytes.byteLength === 0) return;
    this.offsets[channel] += bytes.byteLength;
    this.capture.push(channel, bytes);
    const [onBytes, onText] = channel === 'stdout' ? [this.callbacks.onStdoutBytes, this.callbacks.onStdout] : [this.callbacks.onStderrBytes, this.callbacks.onStderr];
    this.call(onBytes, bytes);
    if (onText) {
      const text = this.decoders[channel].decode(bytes, { stream: true });
      if (text) this.call(onText, text);
    }
  }

  /** End of both streams: flush the decoders (an incomplete trailing character becomes U+FFFD). */
  finish(): void {
    this.capture.end();
    const out = this.callbacks.onStdout ? this.decoders.stdout.decode() : '';
    const err = this.callbacks.onStderr ? this.decoders.stderr.decode() : '';
    if (out) this.call(this.callbacks.onStdout, out);
    if (err) this.call(this.callbacks.onStderr, err);
  }

  /** The result's output fields: `stdout`, `stderr`, `truncated`, `capture` (counted from the start offsets). */
  result(): CapturedOutput {
    return this.capture.result();
  }

  private call<T>(fn: ((value: T) => void) | undefined, value: T): void {
    if (!fn) return;
    try { fn(value); } catch (err) { this.callbackError ??= err; }
  }
}
