/**
 * What counts as use of a sandbox, for idle auto-pause: the last time something touched it (an API call
 * naming it, an ingress request, its start or resume) and what is open on it now (API requests in flight,
 * exec/attach streams, ingress requests and WebSockets). Kept in memory per daemon; the last-use times are
 * also written to the store by {@link ActivityPersister} (batched, at most every `activityPersistMs`, and
 * once more when the daemon stops), and a sandbox this daemon has not seen yet starts from its stored
 * `lastActiveAt`, so a daemon restart does not restart the idle clock.
 */
import type { Clock } from '../ports/clock.js';
import type { SandboxActivityRecord } from '../ports/store.js';

export class SandboxActivity {
  readonly #clock: Clock;
  /** Last touch per sandbox, ms. */
  readonly #lastAt = new Map<string, number>();
  /** Holds open per sandbox. */
  readonly #open = new Map<string, number>();
  /** Sandboxes touched since the last {@link takeUnsaved}. */
  readonly #unsaved = new Set<string>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Something used the sandbox now. */
  touch(sandboxId: string): void {
    this.#lastAt.set(sandboxId, this.#clock.now());
    this.#unsaved.add(sandboxId);
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
   * How long the sandbox has been idle at `now`, ms: 0 while a hold is open. A sandbox this daemon has not
   * seen yet starts from `storedAt` (its record's `lastActiveAt`, written by an earlier daemon), else now.
   */
  idleMs(sandboxId: string, now = this.#clock.now(), storedAt: number | null = null): number {
    if (this.openCount(sandboxId) > 0) return 0;
    let last = this.#lastAt.get(sandboxId);
    if (last === undefined) {
      last = storedAt === null ? now : Math.min(storedAt, now);
      this.#lastAt.set(sandboxId, last);
    }
    return Math.max(0, now - last);
  }

  /**
   * The last-use times to write to the store now, and forgets that they are unsaved: each sandbox touched
   * since the last call, and each with a hold open (in use at `now`).
   */
  takeUnsaved(now = this.#clock.now()): SandboxActivityRecord[] {
    const out = new Map<string, number>();
    for (const id of this.#unsaved) {
      const at = this.#lastAt.get(id);
      if (at !== undefined) out.set(id, at);
    }
    for (const id of this.#open.keys()) out.set(id, now);
    this.#unsaved.clear();
    return [...out].map(([sandboxId, at]) => ({ sandboxId, at }));
  }

  /** Drop what is known of a sandbox (it was killed). Open holds stay counted until released. */
  forget(sandboxId: string): void {
    this.#lastAt.delete(sandboxId);
    this.#unsaved.delete(sandboxId);
  }
}
