/**
 * A sweep run every `intervalMs` on an unref'd timer (it never keeps the process alive), one run at a
 * time: a run still going when the next is due is shared, not doubled. The shared scaffolding of the
 * timeout scheduler and the liveness monitor.
 */
export class PeriodicTask {
  readonly #intervalMs: number;
  readonly #task: () => Promise<void>;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  /** `task` must not reject. `intervalMs` <= 0: {@link start} does nothing (runs only on {@link sweep}). */
  constructor(intervalMs: number, task: () => Promise<void>) {
    this.#intervalMs = intervalMs;
    this.#task = task;
  }

  /** Run every `intervalMs` until {@link stop}. */
  start(): void {
    if (this.#timer || this.#intervalMs <= 0) return;
    this.#timer = setInterval(() => void this.sweep(), this.#intervalMs);
    this.#timer.unref();
  }

  /** Stop; resolves when a run in progress has finished. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** Run now, or join the run in progress. Never rejects. */
  sweep(): Promise<void> {
    this.#running ??= this.#task().finally(() => (this.#running = undefined));
    return this.#running;
  }
}
