/**
 * Sender side of a flow-controlled stream: the receiver grants credit in bytes, the sender takes
 * credit before sending. Used by the client for file uploads and by the agent for file downloads.
 */

/** Thrown by {@link CreditGate.acquire} once the gate is closed (stream cancelled or channel gone). */
export class StreamClosedError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'StreamClosedError';
  }
}

export class CreditGate {
  private credit: number;
  private waiter: { resolve: () => void; reject: (err: Error) => void } | undefined;
  private closedReason: string | undefined;
  private granted = false;

  /** @param initialBytes credit granted before any `credit` message arrives. */
  constructor(initialBytes = 0) {
    this.credit = initialBytes;
    this.granted = initialBytes > 0;
  }

  /** Add `bytes` of credit (a `credit` message arrived). */
  grant(bytes: number): void {
    if (!(bytes > 0)) return;
    this.credit += bytes;
    this.granted = true;
    this.wake();
  }

  /**
   * Resolves once the receiver granted credit at least once, i.e. it is ready for the stream (so even an
   * empty stream's `end` is not sent before the receiver knows the stream).
   * @throws StreamClosedError when the gate is closed first.
   */
  async opened(): Promise<void> {
    while (!this.granted) {
      if (this.closedReason !== undefined) throw new StreamClosedError(this.closedReason);
      await new Promise<void>((resolve, reject) => {
        this.waiter = { resolve, reject };
      });
    }
  }

  /** Fail current and future {@link acquire} calls with `reason`. */
  close(reason: string): void {
    if (this.closedReason !== undefined) return;
    this.closedReason = reason;
    const w = this.waiter;
    this.waiter = undefined;
    w?.reject(new StreamClosedError(reason));
  }

  get closed(): boolean {
    return this.closedReason !== undefined;
  }

  /**
   * Wait until some credit is available and take up to `maxBytes` of it.
   * @returns the number of bytes the caller may send now (1..maxBytes).
   * @throws StreamClosedError when the gate is closed.
   */
  async acquire(maxBytes: number): Promise<number> {
    while (this.credit <= 0) {
      if (this.closedReason !== undefined) throw new StreamClosedError(this.closedReason);
      await new Promise<void>((resolve, reject) => {
        this.waiter = { resolve, reject };
      });
    }
    if (this.closedReason !== undefined) throw new StreamClosedError(this.closedReason);
    const n = Math.min(maxBytes, this.credit);
    this.credit -= n;
    return n;
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.resolve();
  }
}
