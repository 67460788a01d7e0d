// bench/support/stats.mjs: the small statistics every bench prints (medians, percentiles, bootstrap
// intervals, geometric means), the `ok`/`MISSED` marks its targets get, and the timing wrapper. Each
// helper keeps the exact arithmetic the benches had in their own copies, so a bench's figures print the
// same as before: two medians (`median` averages the two middle samples, `upperMedian` takes the upper
// one) and two percentile rules (`quantile`, `nearestRank`) stay separate on purpose. Home-made rather
// than a library: the one statistics package in package-lock.json (hdr-histogram-js, autocannon's)
// buckets values into an integer histogram, which would change the figures.
// None of them throws; an empty list gives `undefined` (medians, percentiles) or NaN (means).

/** Ascending copy of `xs` (numbers); `xs` is left as it was. */
const ascending = (xs) => [...xs].sort((a, b) => a - b);

/**
 * Percentile of `xs` (numbers, any unit) by the floor rule: the sorted sample at index
 * `min(n - 1, floor(n * q))`, `q` in 0..1 (0.5: the median's upper middle, 0.99: p99). Same unit as `xs`.
 */
export const quantile = (xs, q) => ascending(xs)[Math.min(xs.length - 1, Math.floor(xs.length * q))];

/**
 * Nearest-rank percentile of `xs` (numbers, any unit): the sorted sample at index
 * `max(0, ceil(q * n) - 1)`, `q` in 0..1. For an even count its p50 is the lower middle sample.
 */
export const nearestRank = (xs, q) => ascending(xs)[Math.max(0, Math.ceil(q * xs.length) - 1)];

/** Median of `xs` (numbers, any unit) as one of its samples: for an even count the upper middle one. */
export const upperMedian = (xs) => quantile(xs, 0.5);

/** Median of `xs` (numbers, any unit): the middle sample, or for an even count the mean of the two middle ones. */
export function median(xs) {
  const s = ascending(xs);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** Arithmetic mean of `xs` (numbers, any unit). */
export const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * Geometric mean of `xs` (positive numbers, typically ratios): the product to the power 1/n. Computed
 * directly, not in log space: meant for a handful of values near 1 (for two, exactly `Math.sqrt(a * b)`).
 */
export const geometricMean = (xs) => xs.reduce((a, b) => a * b, 1) ** (1 / xs.length);

/**
 * A deterministic pseudo-random source (a 32-bit linear congruential generator), so that a bootstrap's
 * figures print the same twice. Returns a function giving numbers in [0, 1).
 */
export function seededRandom(seed = 0x2545f491) {
  let state = seed;
  return () => ((state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32);
}

/**
 * Percentile bootstrap interval of `statistic` over `groups` (arrays of samples): `resamples` times each
 * group is resampled with replacement (in order, from one {@link seededRandom} of `seed`) and
 * `statistic(resampledGroups)` computed; returns `[low, high]`, the {@link quantile}s `low` and `high`
 * (0..1) of those values, in the statistic's unit. The default is a 90 % interval of 2000 resamples.
 */
export function bootstrapInterval(groups, statistic, { resamples = 2000, low = 0.05, high = 0.95, seed = 0x2545f491 } = {}) {
  const random = seededRandom(seed);
  const resample = (xs) => xs.map(() => xs[Math.floor(random() * xs.length)]);
  const values = Array.from({ length: resamples }, () => statistic(groups.map(resample)));
  return [quantile(values, low), quantile(values, high)];
}

/** A target's mark: `'ok'` when `pass`, else `'MISSED'`. */
export const verdict = (pass) => (pass ? 'ok' : 'MISSED');

/** `'ok'` when `value <= target` (the same unit), else `'MISSED'` (NaN misses). */
export const ok = (value, target) => verdict(value <= target);

/** A ratio against its ceiling, as the tables print it: `<= 1.3x ok` or `<= 1.3x MISSED`. */
export const ratioTarget = (ratio, target) => `<= ${target}x ${ok(ratio, target)}`;

/**
 * Run `fn` once and time it with performance.now(): returns `[ms, result]`. A promise `fn` returns is
 * awaited (and timed); a plain value is not, so a synchronous operation is timed without a microtask turn.
 * Rejects with what `fn` threw or rejected with.
 */
export async function time(fn) {
  const t = performance.now();
  let result = fn();
  if (result && typeof result.then === 'function') result = await result;
  return [performance.now() - t, result];
}

/** {@link time}'s milliseconds alone: how long `fn` (and the promise it returns, if any) took, ms. */
export const timeMs = async (fn) => (await time(fn))[0];
