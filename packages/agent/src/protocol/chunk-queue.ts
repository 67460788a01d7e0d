/**
 * Receiver side of a flow-controlled stream: chunks pushed as they arrive, consumed as an async
 * iterator. The queue itself is unbounded; the sender's credit keeps it small. `onConsumed` is told how
 * many bytes the consumer took, which is when the receiver grants new credit.
 */
export class ChunkQueue implements AsyncIterable<Uint8Array> {
  private readonly chunks: Uint8Array[] = [];
  private ended = false;
  private failure: Error | undefined;
  private waiter: (() => void) | undefined;

  /** @param onConsumed called with the byte length of each chunk handed to the consumer. */
  constructor(private readonly onConsumed: (bytes: number) => void = () => undefined) {}

  push(chunk: Uint8Array): void {
    if (this.ended) return;
    this.chunks.push(chunk);
    this.wake();
  }

  /** No more chunks; with `error`, the consumer throws it after the chunks already queued are dropped. */
  end(error?: Error): void {
    if (this.ended) return;
    this.ended = true;
    if (error) {
      this.failure = error;
      this.chunks.length = 0;
    }
    this.wake();
  }

  get isEnded(): boolean {
    return this.ended;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      const chunk = this.chunks.shift();
      if (chunk) {
        this.onConsumed(chunk.byteLength);
        yield chunk;
        continue;
      }
      if (this.failure) throw this.failure;
      if (this.ended) return;
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }
}
