/**
 * Per-key mutual exclusion on one host: concurrent lifecycle calls on one sandbox run one after the other,
 * in arrival order, while calls on different sandboxes run in parallel. A lock is keyed by (host, key):
 * it excludes the calls of host {@link KeyedLock.hostId}'s process only, which is enough for a sandbox's
 * lifecycle because every call on a sandbox runs on the host that holds it (`SandboxRecord.hostId`). Keys
 * that are not a sandbox's (`team:<id>` quotas, `budget-tree:<id>`) exclude within this host only too:
 * with several processes over one store, those need the store's own locks (docs/design/ARCHITECTURE.md).
 */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<void>>();
  #lastReleasedMs = -Infinity;

  /** @param hostId the host whose calls these locks order (`Core.hostId`). */
  constructor(readonly hostId: string) {}

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
