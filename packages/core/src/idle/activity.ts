/**
 * What counts as use of a sandbox, for idle auto-pause: the last time something touched it (an API call
 * naming it, an ingress request, its start or resume) and what is open on it now (API requests in flight,
 * exec/attach streams, ingress requests and WebSockets). In memory, per daemon: after a restart every
 * sandbox's idle time counts from the first time the scheduler looks at it.
 */
import type { Clock } from '../ports/clock.js';

export class SandboxActivity {
  readonly #clock: Clock;
  /** Last touch per sandbox, ms. */
  readonly #lastAt = new Map<string, number>();
  /** Holds open per sandbox. */
  readonly #open = new Map<string, number>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Something used the sandbox now. */
  touch(sandboxId: string): void {
    this.#lastAt.set(sandboxId, this.#clock.now());
  }

  /**
   * Something is open on the sandbox (a request, a stream, a connection) until the returned function is
   * called (calling it again does nothing). Opening and closing both touch it.
   */
  hold(sandboxId: string): () => void {
    this.touch(sandboxId);
    this.#open.set(sandboxId, (this.#open.get(sandboxId) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#open.get(sandboxId) ?? 1) - 1;
      if (left <= 0) this.#open.delete(sandboxId);
      else this.#open.set(sandboxId, left);
      this.touch(sandboxId);
    };
  }

  /** How many holds are open on the sandbox. */
  openCount(sandboxId: string): number {
    return this.#open.get(sandboxId) ?? 0;
  }

  /**
   * How long the sandbox has been idle at `now`, ms: 0 while a hold is open; a sandbox never seen starts
   * its idle time now.
   */
  idleMs(sandboxId: string, now = this.#clock.now()): number {
    if (this.openCount(sandboxId) > 0) return 0;
    const last = this.#lastAt.get(sandboxId);
    if (last === undefined) {
      this.#lastAt.set(sandboxId, now);
      return 0;
    }
    return Math.max(0, now - last);
  }

  /** Drop what is known of a sandbox (it was killed). Open holds stay counted until released. */
  forget(sandboxId: string): void {
    this.#lastAt.delete(sandboxId);
  }
}
