/**
 * Turning byte streams into log lines: UTF-8 decoding across chunk boundaries, `\n`, `\r\n` and bare
 * `\r` (progress bars) as line ends, and a bounded tail of the last lines for error messages.
 */
import { StringDecoder } from 'node:string_decoder';

/** Longest line emitted; longer ones are cut into pieces of this many characters. */
const MAX_LINE_CHARS = 4096;

/** Splits a byte stream into lines; call `push` per chunk and `end` once. */
export class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private partial = '';

  constructor(private readonly onLine: (line: string) => void) {}

  push(chunk: Uint8Array): void {
    this.feed(this.decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)));
  }

  /** Flush the last unterminated line, if any. */
  end(): void {
    this.feed(this.decoder.end(), true);
    if (this.partial) this.onLine(this.partial);
    this.partial = '';
  }

  private feed(text: string, final = false): void {
    let combined = this.partial + text;
    // A chunk ending in \r may be the first half of \r\n: decide when the next chunk comes.
    const heldCr = !final && combined.endsWith('\r');
    if (heldCr) combined = combined.slice(0, -1);
    const parts = combined.split(/\r\n|\n|\r/);
    this.partial = (parts.pop() ?? '') + (heldCr ? '\r' : '');
    for (const line of parts) this.onLine(line);
    while (this.partial.length > MAX_LINE_CHARS) {
      this.onLine(this.partial.slice(0, MAX_LINE_CHARS));
      this.partial = this.partial.slice(MAX_LINE_CHARS);
    }
  }
}

/** Keeps the last `limit` lines seen. */
export class LineTail {
  private readonly lines: string[] = [];

  constructor(private readonly limit = 20) {}

  add(line: string): void {
    this.lines.push(line);
    if (this.lines.length > this.limit) this.lines.shift();
  }

  toString(): string {
    return this.lines.join('\n');
  }
}
