/**
 * The live metrics of running sandboxes: one sample per sandbox per sampling interval, kept in memory for
 * `metricsWindowMs` (default an hour: 720 samples at 5 s) and dropped when the sandbox is killed. Not
 * persisted: a daemon restart starts every sandbox's window afresh (the metered totals are in the store).
 */

/** One sample (see the API's `SandboxMetric`); `at` in ms. */
export interface MetricSample {
  at: number;
  cpuCount: number;
  /** Percent of `cpuCount` cores used since the previous sample. */
  cpuUsedPct: number;
  memUsed: number;
  memTotal: number;
  diskUsed: number | null;
  diskTotal: number | null;
}

export class MetricsWindow {
  readonly #windowMs: number;
  readonly #samples = new Map<string, MetricSample[]>();

  /** Keep each sandbox's samples of the last `windowMs`. */
  constructor(windowMs: number) {
    this.#windowMs = windowMs;
  }

  /** Add a sample (in time order) and drop the sandbox's samples older than the window. */
  add(sandboxId: string, sample: MetricSample): void {
    let list = this.#samples.get(sandboxId);
    if (!list) this.#samples.set(sandboxId, (list = []));
    list.push(sample);
    const oldest = sample.at - this.#windowMs;
    let drop = 0;
    while (drop < list.length && list[drop].at < oldest) drop++;
    if (drop > 0) list.splice(0, drop);
  }

  /** The sandbox's samples with `start <= at <= end`, oldest first (copies). */
  list(sandboxId: string, start: number, end: number): MetricSample[] {
    return (this.#samples.get(sandboxId) ?? []).filter((s) => s.at >= start && s.at <= end).map((s) => ({ ...s }));
  }

  /** Forget a sandbox (it was killed). */
  forget(sandboxId: string): void {
    this.#samples.delete(sandboxId);
  }

  /** Drop every sample older than `now - windowMs` (paused sandboxes' windows age out too). */
  prune(now: number): void {
    for (const [id, list] of this.#samples) {
      const kept = list.filter((s) => s.at >= now - this.#windowMs);
      if (kept.length === 0) this.#samples.delete(id);
      else if (kept.length !== list.length) this.#samples.set(id, kept);
    }
  }
}
