/**
 * How a command result captures a process's output: the head of each stream, at most a limit of bytes
 * (`maxOutputBytes`, default {@link DEFAULT_MAX_OUTPUT_BYTES}), decoded as UTF-8, plus the counts that
 * say whether and where it was cut. The daemon (`POST /commands`), the SDK (results of streamed runs) and
 * the protocol fixture all capture with {@link ResultCapture}, so a result means the same everywhere.
 *
 * The cut never splits a character: when the limit falls inside a multi-byte UTF-8 sequence, that whole
 * character is left out (up to 3 bytes under the limit), so the kept text never ends in a U+FFFD the
 * process did not write. Bytes that are not UTF-8 are decoded as U+FFFD, as ever (collect the byte
 * callbacks or stream the output for binary data). A stream that ends inside a character (the process
 * wrote half of one) keeps it as a U+FFFD, as when nothing is cut.
 */
import type { CapturedStream, CommandCapture } from './api.js';

/** Default per-stream limit of a command result, bytes (32 MiB). */
export const DEFAULT_MAX_OUTPUT_BYTES = 32 << 20;
/**
 * Largest per-stream limit a daemon accepts, bytes (40 MiB): a foreground result is one JSON body
 * holding both streams, and output of control bytes is escaped as `\u00XX` (6 characters a byte), so
 * 2 x 6 x 40 MiB stays under V8's longest string (2^29 - 24 characters).
 */
export const MAX_OUTPUT_BYTES_CEILING = 40 << 20;

/**
 * Length of the incomplete UTF-8 sequence at the end of `tail` (0-3 bytes): the bytes a streaming
 * WHATWG decoder still holds back, waiting for the rest of the character. `tail` is the last (up to 3)
 * bytes of a stream.
 */
export function incompleteUtf8Tail(tail: Uint8Array): number {
  const n = tail.byteLength;
  for (let back = 1; back <= Math.min(3, n); back++) {
    const lead = tail[n - back] as number;
    if ((lead & 0xc0) === 0x80) continue;
    const need = lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 1;
    if (need <= back) return 0;
    // The decoder rejects a bad second byte at once (U+FFFD), so then nothing is held back.
    if (back >= 2 && !secondByteFits(lead, tail[n - back + 1] as number)) return 0;
    return back;
  }
  return 0;
}

/** The WHATWG decoder's range for the byte after `lead`. */
function secondByteFits(lead: number, byte: number): boolean {
  const [low, high] = lead === 0xe0 ? [0xa0, 0xbf] : lead === 0xed ? [0x80, 0x9f] : lead === 0xf0 ? [0x90, 0xbf] : lead === 0xf4 ? [0x80, 0x8f] : [0x80, 0xbf];
  return byte >= low && byte <= high;
}

/** The head of one stream, at most `limitBytes` bytes of it, decoded as it arrives. */
export class StreamCapture {
  #decoder = new TextDecoder('utf-8');
  #text = '';
  /** Bytes handed to the decoder (never more than the limit). */
  #fed = 0;
  #total = 0;
  /** The last (up to 3) bytes handed to the decoder, to know what it holds back. */
  #tail = new Uint8Array(0);
  #ended = false;

  /** @param limitBytes bytes of the stream to keep, >= 0. */
  constructor(readonly limitBytes: number) {}

  /** Take the next chunk of the stream (counted in full; kept up to the limit). Ignored after {@link end}. */
  push(chunk: Uint8Array): void {
    if (this.#ended || chunk.byteLength === 0) return;
    this.#total += chunk.byteLength;
    const room = this.limitBytes - this.#fed;
    if (room <= 0) return;
    const part = chunk.byteLength > room ? chunk.subarray(0, room) : chunk;
    this.#text += this.#decoder.decode(part, { stream: true });
    this.#fed += part.byteLength;
    const last = part.subarray(Math.max(0, part.byteLength - 3));
    const joined = new Uint8Array(this.#tail.byteLength + last.byteLength);
    joined.set(this.#tail);
    joined.set(last, this.#tail.byteLength);
    this.#tail = joined.subarray(Math.max(0, joined.byteLength - 3));
  }

  /** The stream ended: an incomplete last character the process wrote becomes U+FFFD (unless cut). */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (!this.truncated) this.#text += this.#decoder.decode();
  }

  /** True when the stream had more bytes than the limit (the text is its head). */
  get truncated(): boolean {
    return this.#total > this.limitBytes;
  }

  /** The kept text. */
  get text(): string {
    return this.#text;
  }

  /** Bytes of the stream the text holds (without a character the cut or the stream's end left incomplete, until it ended). */
  get keptBytes(): number {
    return this.#ended && !this.truncated ? this.#fed : this.#fed - incompleteUtf8Tail(this.#tail);
  }

  /** Bytes of the stream seen, kept or not. */
  get totalBytes(): number {
    return this.#total;
  }

  /** The counts, as in a result. */
  counts(): CapturedStream {
    return { keptBytes: this.keptBytes, totalBytes: this.totalBytes };
  }
}

/** What a {@link ResultCapture} adds to a command result. */
export interface CapturedOutput {
  stdout: string;
  stderr: string;
  truncated: boolean;
  capture: CommandCapture;
}

/** Both streams of one process, each kept up to the same limit. */
export class ResultCapture {
  readonly stdout: StreamCapture;
  readonly stderr: StreamCapture;

  /** @param limitBytes bytes kept of each stream, >= 0 (the daemon's `maxOutputBytes`). */
  constructor(readonly limitBytes: number) {
    this.stdout = new StreamCapture(limitBytes);
    this.stderr = new StreamCapture(limitBytes);
  }

  /** Take a chunk of `channel`. */
  push(channel: 'stdout' | 'stderr', chunk: Uint8Array): void {
    this[channel].push(chunk);
  }

  /** Both streams ended (see {@link StreamCapture.end}). */
  end(): void {
    this.stdout.end();
    this.stderr.end();
  }

  /** The result's output fields as they stand (call {@link end} first when the process exited). */
  result(): CapturedOutput {
    return {
      stdout: this.stdout.text,
      stderr: this.stderr.text,
      truncated: this.stdout.truncated || this.stderr.truncated,
      capture: { limitBytes: this.limitBytes, stdout: this.stdout.counts(), stderr: this.stderr.counts() },
    };
  }
}
