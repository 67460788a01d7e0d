/**
 * Wire framing of the agent protocol: every frame is a 4-byte big-endian body length followed by one
 * msgpack-encoded message. Binary payloads travel as msgpack `bin` (never base64). The decoder accepts
 * arbitrary chunking: partial frames are kept until complete, and one chunk may carry many frames.
 */
import { Decoder, Encoder } from '@msgpack/msgpack';

/** Largest accepted frame body, in bytes. Data frames are far smaller (see `MAX_DATA_CHUNK_BYTES`). */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

const HEADER_BYTES = 4;

// One long-lived encoder and decoder: their buffers grow once to the largest frame and are reused, so a
// stream of 256 KiB data frames does not allocate (and grow by doubling) a fresh buffer per frame.
const encoder = new Encoder({ ignoreUndefined: true, initialBufferSize: 64 * 1024 });
const decoder = new Decoder();

/** Thrown by {@link FrameDecoder} when the peer sends something that is not a valid frame. */
export class FramingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FramingError';
  }
}

/**
 * Encode one message as a complete frame (header + msgpack body). `undefined` fields are omitted.
 * @throws FramingError when the encoded body exceeds {@link MAX_FRAME_BYTES}.
 */
export function encodeFrame(message: unknown): Buffer {
  const body = encoder.encodeSharedRef(message); // A view into the encoder's buffer: copied below.
  if (body.byteLength > MAX_FRAME_BYTES) throw new FramingError(`frame of ${body.byteLength} bytes exceeds ${MAX_FRAME_BYTES}`);
  const frame = Buffer.allocUnsafe(HEADER_BYTES + body.byteLength);
  frame.writeUInt32BE(body.byteLength, 0);
  frame.set(body, HEADER_BYTES);
  return frame;
}

/**
 * Incremental frame decoder. Feed it chunks in arrival order with {@link FrameDecoder.push}; it returns
 * every message completed by that chunk. Large frames are assembled with a single copy.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Body length of the frame being assembled, once its header is known. */
  private expected = -1;

  /**
   * Append a chunk and return the decoded messages it completed (possibly none).
   * @throws FramingError on an oversized frame or a body that is not valid msgpack.
   */
  push(chunk: Uint8Array): unknown[] {
    if (chunk.byteLength === 0) return [];
    this.chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    this.buffered += chunk.byteLength;
    const out: unknown[] = [];
    for (;;) {
      if (this.expected < 0) {
        if (this.buffered < HEADER_BYTES) break;
        const header = this.take(HEADER_BYTES);
        this.expected = header.readUInt32BE(0);
        if (this.expected > MAX_FRAME_BYTES) throw new FramingError(`incoming frame of ${this.expected} bytes exceeds ${MAX_FRAME_BYTES}`);
      }
      if (this.buffered < this.expected) break;
      const body = this.take(this.expected);
      this.expected = -1;
      try {
        out.push(decoder.decode(body));
      } catch (err) {
        throw new FramingError(`undecodable frame: ${(err as Error).message}`);
      }
    }
    return out;
  }

  /** Bytes received but not yet decoded (a partial frame). */
  get pendingBytes(): number {
    return this.buffered;
  }

  /** Remove exactly `n` bytes from the front of the buffered chunks. */
  private take(n: number): Buffer {
    const first = this.chunks[0];
    if (first.byteLength >= n) {
      // Common case: served from one chunk without copying.
      const head = first.subarray(0, n);
      if (first.byteLength === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      this.buffered -= n;
      return head;
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const c = this.chunks[0];
      const want = n - filled;
      if (c.byteLength <= want) {
        out.set(c, filled);
        filled += c.byteLength;
        this.chunks.shift();
      } else {
        out.set(c.subarray(0, want), filled);
        this.chunks[0] = c.subarray(want);
        filled += want;
      }
    }
    this.buffered -= n;
    return out;
  }
}
