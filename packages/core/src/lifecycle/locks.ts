/**
 * Per-key mutual exclusion: concurrent lifecycle calls on one sandbox run one after the other, in arrival
 * order, while calls on different sandboxes run in parallel. In-process only (one daemon owns a sandbox).
 */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<void>>();
  #lastReleasedMs = -Infinity;

  /** Run `fn` once every earlier holder of `key` has finished; resolves/rejects with `fn`'s outcome. */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => mine);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
      this.#lastReleasedMs = performance.now();
    }
  }

  /** Keys some call holds or waits for right now. */
  get size(): number {
    return this.#tails.size;
  }

  /** Time since a call last let a key go, ms (Infinity when none ever did): background work waits for quiet. */
  quietForMs(): number {
    return performance.now() - this.#lastReleasedMs;
  }

  /** True while some call holds or waits for `key`. */
  isBusy(key: string): boolean {
    return this.#tails.has(key);
  }
}
