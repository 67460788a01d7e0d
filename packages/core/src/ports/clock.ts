/**
 * The Clock port: wall time and waiting, injected so tests can drive time. Times are ms since the epoch.
 */
export interface Clock {
  /** Current wall time, ms since the epoch. */
  now(): number;
  /** Resolve after `ms` milliseconds (at once for 0). */
  sleep(ms: number): Promise<void>;
}

/** The real clock (`Date.now`, `setTimeout`). */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms))),
};
