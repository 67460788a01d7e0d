/**
 * Cutting long text for a model: keep the head and the tail of what a command or a file said, put one
 * clear marker where the middle was dropped (how many bytes, and where the whole of it is), never split
 * a UTF-8 character. Sizes are UTF-8 bytes.
 */
import { incompleteUtf8Tail } from '@ramify/contracts';

/** Share of the kept bytes taken from the head (the rest is the tail, where errors usually are). */
const HEAD_SHARE = 0.4;

/** What {@link cutForModel} returns. */
export interface CutText {
  text: string;
  /** True when bytes were dropped. */
  cut: boolean;
  /** UTF-8 bytes of the whole input. */
  totalBytes: number;
  /** UTF-8 bytes of it kept (head + tail, the marker not counted). */
  keptBytes: number;
}

/** The largest index <= `at` in `bytes` that is not inside a UTF-8 character. */
export function charBoundary(bytes: Uint8Array, at: number): number {
  let i = Math.max(0, Math.min(at, bytes.byteLength));
  while (i > 0 && i < bytes.byteLength && ((bytes[i] as number) & 0xc0) === 0x80) i--;
  return i;
}

/** `bytes` without the incomplete UTF-8 character at its end, if it ends inside one (a cut read). */
export function wholeChars(bytes: Buffer): Buffer {
  return bytes.subarray(0, bytes.byteLength - incompleteUtf8Tail(bytes.subarray(Math.max(0, bytes.byteLength - 3))));
}

/**
 * `text` when it fits in `limitBytes`; otherwise its first ~40% and last ~60% of `limitBytes` with the
 * marker `[ramify: N of M bytes cut here; <where>]` between them. `where` says where the full text is.
 */
export function cutForModel(text: string, limitBytes: number, where: string): CutText {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.byteLength <= limitBytes) return { text, cut: false, totalBytes: bytes.byteLength, keptBytes: bytes.byteLength };
  const headEnd = charBoundary(bytes, Math.floor(limitBytes * HEAD_SHARE));
  const tailStart = charBoundary(bytes, bytes.byteLength - (limitBytes - headEnd));
  const dropped = tailStart - headEnd;
  const marker = `\n[ramify: ${dropped} of ${bytes.byteLength} bytes cut here (bytes ${headEnd}-${tailStart}); ${where}]\n`;
  return {
    text: bytes.subarray(0, headEnd).toString('utf8') + marker + bytes.subarray(tailStart).toString('utf8'),
    cut: true,
    totalBytes: bytes.byteLength,
    keptBytes: headEnd + bytes.byteLength - tailStart,
  };
}
