/**
 * This process's foreground work: lifecycle calls (while they hold or wait for a {@link KeyedLock} key)
 * and foreground commands in flight. Background work that can wait a little (webhook deliveries) asks
 * {@link ForegroundWork.quietForMs} and starts once the foreground has been quiet for a while, so its CPU
 * and store writes do not land on the caller's next call. Measured with bench/lifecycle/observability.mjs:
 * a webhook delivered at once after a create (event match, delivery row, signed POST, attempt row) made the
 * exec that followed 6-11 % slower on two cores; recording the event alone cost nothing measurable.
 */
import type { KeyedLock } from './locks.js';

export class ForegroundWork {
  #inFlight = 0;
  #lastEndedMs = -Infinity;

  /** @param locks the process's lifecycle locks: a call holding or waiting for a key is foreground work. */
  constructor(private readonly locks: Pick<KeyedLock, 'size' | 'quietForMs'>) {}

  /** Run `fn` as foreground work (a foreground command); resolves/rejects with its outcome. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    this.#inFlight += 1;
    try {
      return await fn();
    } finally {
      this.#inFlight -= 1;
      this.#lastEndedMs = performance.now();
    }
  }

  /** Time since the last foreground work ended, ms: 0 while some is in flight, Infinity when none ever ran. */
  quietForMs(): number {
    if (this.#inFlight > 0 || this.locks.size > 0) return 0;
    return Math.min(performance.now() - this.#lastEndedMs, this.locks.quietForMs());
  }
}
