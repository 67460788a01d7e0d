/**
 * A bounded buffer of one output stream (stdout or stderr) of one process, addressed by absolute byte
 * offsets counted from the stream's first byte. It keeps the last `capacityBytes` bytes; older bytes
 * are dropped and reading below {@link OutputRing.start} is impossible. Storage is fixed-size blocks,
 * so many tiny writes cost no more than one large one and lookups by offset are O(1).
 */

const BLOCK_BYTES = 64 * 1024;

export class OutputRing {
  private blocks: Buffer[] = [];
  /** Absolute offset of `blocks[0][0]`. */
  private firstBlockOffset = 0;
  private total = 0;
  private dropped = 0;

  /** @param capacityBytes how many of the most recent bytes are kept (> 0). */
  constructor(private capacityBytes: number) {}

  /** Absolute offset one past the last byte ever written. */
  get end(): number {
    return this.total;
  }

  /** Absolute offset of the oldest byte still held. */
  get start(): number {
    return Math.max(this.dropped, this.total - this.capacityBytes);
  }

  /** Bytes currently held. */
  get heldBytes(): number {
    return this.total - this.start;
  }

  /** Append bytes (copied). */
  append(chunk: Uint8Array): void {
    let pos = 0;
    while (pos < chunk.byteLength) {
      const used = (this.total - this.firstBlockOffset) % BLOCK_BYTES;
      if (used === 0 && this.total - this.firstBlockOffset === this.blocks.length * BLOCK_BYTES) {
        this.blocks.push(Buffer.allocUnsafe(BLOCK_BYTES));
      }
      const block = this.blocks[this.blocks.length - 1];
      const n = Math.min(BLOCK_BYTES - used, chunk.byteLength - pos);
      block.set(chunk.subarray(pos, pos + n), used);
      pos += n;
      this.total += n;
    }
    this.trim();
  }

  /**
   * Bytes from `offset` on, at most `maxBytes`, without copying (a view valid until the next append).
   * Returns an empty buffer when `offset` is at or past the end.
   * @throws RangeError when `offset` is below {@link start} (those bytes were dropped).
   */
  read(offset: number, maxBytes: number): Buffer {
    if (offset < this.start) throw new RangeError(`offset ${offset} was dropped (buffer starts at ${this.start})`);
    if (offset >= this.total) return Buffer.alloc(0);
    const rel = offset - this.firstBlockOffset;
    const index = Math.floor(rel / BLOCK_BYTES);
    const within = rel % BLOCK_BYTES;
    const blockEnd = Math.min(BLOCK_BYTES, this.total - this.firstBlockOffset - index * BLOCK_BYTES);
    const n = Math.min(maxBytes, blockEnd - within);
    return this.blocks[index].subarray(within, within + n);
  }

  /** Drop everything held (offsets keep counting); used to free memory of long-exited processes. */
  clear(): void {
    this.dropped = this.total;
    this.trim();
  }

  /** Release whole blocks that lie entirely below {@link start}. */
  private trim(): void {
    const start = this.start;
    while (this.blocks.length > 0 && this.firstBlockOffset + BLOCK_BYTES <= start) {
      this.blocks.shift();
      this.firstBlockOffset += BLOCK_BYTES;
    }
  }
}
