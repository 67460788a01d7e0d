// Shared by the keystroke-echo benches (bench/interactive/run.mjs, ssh.mjs): bytes that came back, with a
// wait for more that wakes on the data event itself (no polling).
export class EchoCounter {
  received = 0;
  #wake = () => undefined;
  add(n) {
    this.received += n;
    this.#wake();
  }
  /** Resolves once more than `count` bytes came back; rejects naming `what` after `limitMs`. */
  past(count, what, limitMs = 10_000) {
    if (this.received > count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting until ${what}`)), limitMs);
      this.#wake = () => {
        if (this.received <= count) return;
        clearTimeout(timer);
        this.#wake = () => undefined;
        resolve();
      };
    });
  }
}
