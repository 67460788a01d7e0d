/**
 * The channel hello: what a gVisor host sends first on a connection to the agent, before any frame
 * (docs/design/RUNTIME-GVISOR.md, "The agent channel"). It authenticates the host on the agent's TCP
 * port and hands the agent its next key:
 *
 *   host → agent, {@link HELLO_BYTES} bytes: `RMFK` | version 1 | key (32 bytes) | next key (32 bytes)
 *   agent → host, 1 byte: {@link HELLO_ACCEPTED}; then the agent protocol's frames. A refused hello gets
 *   no answer: the agent closes the connection.
 *
 * On TCP the key must be the agent's current one; on the unix socket (reached only from inside the
 * sandbox, e.g. through `runsc exec`) it is not checked. Either way the next key, unless all zeros,
 * replaces the agent's key. A connection on the unix socket may also start with a frame at once (no
 * hello): a frame's first byte is its length's high byte, 0 or 1, never `R`.
 */
import type { Readable } from 'node:stream';

/** First bytes of a hello. */
export const HELLO_MAGIC = Buffer.from('RMFK', 'ascii');
/** Bytes of a channel key. */
export const CHANNEL_KEY_BYTES = 32;
/** Bytes of a whole hello. */
export const HELLO_BYTES = HELLO_MAGIC.length + 1 + 2 * CHANNEL_KEY_BYTES;
/** The agent's answer to an accepted hello. */
export const HELLO_ACCEPTED = 0x01;
const HELLO_VERSION = 1;

export interface ChannelHello {
  /** The key the host believes the agent holds ({@link CHANNEL_KEY_BYTES} bytes). */
  key: Buffer;
  /** The key the agent holds from now on; null keeps the current one. */
  nextKey: Buffer | null;
}

/** Encode a hello. @throws RangeError when a key is not {@link CHANNEL_KEY_BYTES} bytes. */
export function encodeHello(hello: ChannelHello): Buffer {
  for (const k of [hello.key, hello.nextKey]) {
    if (k !== null && k.length !== CHANNEL_KEY_BYTES) throw new RangeError(`a channel key is ${CHANNEL_KEY_BYTES} bytes, not ${k.length}`);
  }
  return Buffer.concat([HELLO_MAGIC, Buffer.of(HELLO_VERSION), hello.key, hello.nextKey ?? Buffer.alloc(CHANNEL_KEY_BYTES)]);
}

/** Decode a hello of exactly {@link HELLO_BYTES} bytes; null when it is not one (wrong magic or version). */
export function decodeHello(bytes: Buffer): ChannelHello | null {
  if (bytes.length !== HELLO_BYTES || !bytes.subarray(0, HELLO_MAGIC.length).equals(HELLO_MAGIC) || bytes[HELLO_MAGIC.length] !== HELLO_VERSION) return null;
  const keyAt = HELLO_MAGIC.length + 1;
  const key = Buffer.from(bytes.subarray(keyAt, keyAt + CHANNEL_KEY_BYTES));
  const next = Buffer.from(bytes.subarray(keyAt + CHANNEL_KEY_BYTES));
  return { key, nextKey: next.every((b) => b === 0) ? null : next };
}

const answered = new WeakSet<object>();

/**
 * Mark `stream` as one whose hello the agent has just answered ({@link HELLO_ACCEPTED}): it is up and reads
 * this stream, so `connectAgent` sends no first ping on it (after a restore each round trip costs tens of
 * ms while the sandbox warms up; the first request, e.g. the identity, proves the framing instead).
 */
export function markHelloAnswered(stream: object): void {
  answered.add(stream);
}

/** Whether {@link markHelloAnswered} marked `stream`. */
export function isHelloAnswered(stream: object): boolean {
  return answered.has(stream);
}

/** Whether `first` (a connection's first byte) starts a hello rather than a frame. */
export const startsHello = (first: number): boolean => first === HELLO_MAGIC[0];

/**
 * The next `n` bytes of `stream`, leaving it paused right after them (whoever reads on resumes it), or null
 * when it ends, fails or stays silent for `timeoutMs`. Both sides read the hello's bytes with it.
 */
export function readBytes(stream: Readable, n: number, timeoutMs: number): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const finish = (bytes: Buffer | null): void => {
      clearTimeout(timer);
      stream.off('readable', onReadable);
      for (const event of ['end', 'close', 'error']) stream.off(event, onEnd);
      resolve(bytes);
    };
    const onReadable = (): void => {
      const bytes = stream.read(n) as Buffer | null;
      if (bytes !== null) finish(bytes.length === n ? bytes : null);
    };
    const onEnd = (): void => finish(null);
    const timer = setTimeout(onEnd, timeoutMs);
    stream.on('readable', onReadable);
    for (const event of ['end', 'close', 'error']) stream.on(event, onEnd);
    onReadable();
  });
}
