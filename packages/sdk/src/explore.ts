/**
 * Best-of-N exploration: fork a sandbox once per strategy, try every strategy at the same time from the
 * same starting point (memory, processes, files), score the outcomes, keep the best sandbox.
 */
import { MAX_FORK_COUNT } from '@ramify/contracts/client';
import type { Budget, BudgetInfo } from '@ramify/contracts';
import { RamifyError, errorFromCode, isRamifyError } from './errors.js';
import { stoppedByBudget, watchBudget, type BudgetWatch } from './explore-budget.js';
import type { Sandbox } from './sandbox.js';

/** One way to attempt the task; `run` gets its own fork of the source sandbox. */
export interface Strategy<T> {
  /** Shown in the report; should be unique. */
  name: string;
  run: (sbx: Sandbox) => Promise<T>;
}

/** Options of {@link explore}. */
export interface ExploreOpts<T> {
  /**
   * Score a finished strategy (higher wins; equal scores: the faster run wins, then the earlier strategy).
   * A throw, `NaN` or a value that is not a number (e.g. a boolean) makes the strategy failed.
   */
  score: (result: T, sbx: Sandbox) => number | Promise<number>;
  /** Which forks stay alive afterwards: the `winner` (default), `all`, or `none`. The source is never touched. */
  keep?: 'winner' | 'all' | 'none';
  /**
   * Limits of the exploration, set on the source before it forks (`source.setBudget`): its tree (the source
   * and its forks) counts from then (a budget the source had keeps its start, with these limits). Over
   * cpuSeconds or sandboxSeconds the daemon pauses the tree, never kills it: explore then stops waiting for
   * the strategies still running and returns an {@link ExploreStoppedReport} (`stoppedBy: 'budget'`): the
   * stopped strategies' entries have `status: 'stopped'` and `outcome: 'paused'` (their forks are left to the
   * daemon's pause, which may still be under way when explore returns, and stay `paused`, resumable once
   * `source.setBudget` raises the limit); the ones that finished are scored and handled as usual, and the
   * best of them is the `winner` (null when none finished with a score). A strategy whose command broke
   * because the daemon paused its fork counts as stopped, not failed.
   */
  budget?: Budget;
  /** How often explore looks at the budget while strategies run, ms; default 1000. */
  budgetPollMs?: number;
}

/**
 * What happened to a fork afterwards, not whether its strategy succeeded (that is
 * {@link ExploreEntry.error}). `winner`: the winning strategy's fork, left running (`keep` `winner` or
 * `all`). `kept`: any other fork with `keep: 'all'`, failed ones included, left running. `killed`:
 * every other fork, i.e. each loser or failed strategy with `keep: 'winner'`, and every fork (the
 * winner's too) with `keep: 'none'`. `paused`: the exploration's budget ran out before its strategy
 * ended: the daemon paused the fork and it is left paused, whatever `keep` says (raise the budget with
 * `source.setBudget(...)` and resume it to go on). There is no separate "failed" outcome.
 */
export type ForkOutcome = 'winner' | 'kept' | 'killed' | 'paused';

/** A failure, as recorded in a report. */
export interface ExploreFailure {
  /** The `RamifyError` code, when it was one (e.g. `COMMAND_EXIT`). */
  code?: string;
  message: string;
}

/**
 * How a strategy ended: `finished` (it ran and was scored), `failed` (`run` or `score` threw, or the score
 * was not a number: see {@link ExploreEntry.error}), `stopped` (the exploration's budget ran out before it
 * ended; its fork was left paused).
 */
export type StrategyStatus = 'finished' | 'failed' | 'stopped';

/** One strategy's line in the report. */
export interface ExploreEntry {
  name: string;
  sandboxId: string;
  status: StrategyStatus;
  /** The score; `-Infinity` when the strategy failed or was stopped (see `error`). */
  score: number;
  /** Time `run` took, ms (scoring not included). */
  durationMs: number;
  /**
   * Set when the strategy failed: `run` threw, `score` threw, or the score was `NaN` or not a number.
   * A failed entry has `score: -Infinity` and never wins; its `outcome` is its fork's fate as for
   * any other loser (`killed`, or `kept` with `keep: 'all'`).
   */
  error?: ExploreFailure;
  outcome: ForkOutcome;
  /** Set when killing this fork failed (`outcome` is still `killed`; the fork may still be running). */
  killError?: ExploreFailure;
}

/** The winning strategy. */
export interface ExploreWinner<T> {
  sandbox: Sandbox;
  strategy: string;
  score: number;
  result: T;
  durationMs: number;
}

/** The source and its forks, for drawing. */
export interface ForkTreeNode {
  sandboxId: string;
  /** Strategy that ran in this fork; `null` for the source. */
  strategy: string | null;
  score: number | null;
  outcome: ForkOutcome | 'source';
  /** Why the strategy failed (its entry's `error.message`); `null` when it scored, and for the source. */
  error: string | null;
  children: ForkTreeNode[];
}

/** Result of {@link explore} when every strategy ended on its own. `entries` are in strategy order. */
export interface ExploreReport<T> {
  winner: ExploreWinner<T>;
  entries: ExploreEntry[];
  forkTree: ForkTreeNode;
  /** Null: nothing stopped the exploration (see {@link ExploreStoppedReport}). */
  stoppedBy: null;
}

/**
 * Result of {@link explore} when its budget ran out before every strategy ended: the strategies still
 * running are `stopped` (forks left paused), the others are reported as usual. Never thrown: what finished
 * is yours to use.
 */
export interface ExploreStoppedReport<T> {
  /** The best of the strategies that finished with a score before the budget ran out; null when none did. */
  winner: ExploreWinner<T> | null;
  entries: ExploreEntry[];
  forkTree: ForkTreeNode;
  stoppedBy: 'budget';
  /** The source's budget as explore found it exceeded (limits, what the tree used, which limit). */
  budget: BudgetInfo;
}

/**
 * Every strategy failed (`EXPLORE_FAILED`) and no budget stopped any; `entries` says how. Every fork was
 * killed (`outcome` `killed`), or kept with `keep: 'all'`. (A budget that stops strategies makes explore
 * return an {@link ExploreStoppedReport} instead, even when none finished.)
 */
export class ExploreFailedError extends RamifyError {
  readonly entries: ExploreEntry[];
  constructor(entries: ExploreEntry[]) {
    super('EXPLORE_FAILED', `all ${entries.length} strategies failed: ${entries.map((e) => `${e.name}: ${e.error?.message ?? 'no score'}`).join('; ')}`);
    this.name = 'ExploreFailedError';
    this.entries = entries;
  }
}

const failure = (err: unknown): ExploreFailure =>
  isRamifyError(err) ? { code: err.code, message: err.message } : { message: err instanceof Error ? err.message : String(err) };

interface Attempt<T> { entry: ExploreEntry; sandbox: Sandbox; result?: T }

/** The attempt of a strategy the budget stopped after `durationMs`. */
function stopped<T>(name: string, sandbox: Sandbox, durationMs: number, info: BudgetInfo): Attempt<T> {
  return { entry: { name, sandboxId: sandbox.sandboxId, status: 'stopped', score: -Infinity, durationMs, outcome: 'paused', error: stoppedByBudget(info) }, sandbox };
}

async function attempt<T>(strategy: Strategy<T>, sandbox: Sandbox, opts: ExploreOpts<T>, watch: BudgetWatch | null): Promise<Attempt<T>> {
  const entry: ExploreEntry = { name: strategy.name, sandboxId: sandbox.sandboxId, status: 'failed', score: -Infinity, durationMs: 0, outcome: 'killed' };
  const started = performance.now();
  // A failure while the budget is out: the daemon paused the fork under the strategy (a broken command).
  const failed = async (err: unknown): Promise<Attempt<T>> => {
    const info = watch ? await watch.checkNow() : null;
    if (info) return stopped(strategy.name, sandbox, entry.durationMs, info);
    entry.error = failure(err);
    return { entry, sandbox };
  };
  let result: T;
  try {
    result = await strategy.run(sandbox);
  } catch (err) {
    entry.durationMs = performance.now() - started;
    return failed(err);
  }
  entry.durationMs = performance.now() - started;
  try {
    const score = await opts.score(result, sandbox);
    if (typeof score !== 'number' || Number.isNaN(score)) throw new Error(`score is not a number (${String(score)})`);
    entry.score = score;
    entry.status = 'finished';
  } catch (err) {
    return { ...(await failed(err)), result };
  }
  return { entry, sandbox, result };
}

/** Index of the best attempt: highest score, then shortest duration, then earliest; -1 if all failed. */
export function pickWinner(entries: readonly Pick<ExploreEntry, 'score' | 'durationMs' | 'error'>[]): number {
  let best = -1;
  entries.forEach((e, i) => {
    if (e.error) return;
    const b = best >= 0 ? entries[best] : undefined;
    if (!b || e.score > b.score || (e.score === b.score && e.durationMs < b.durationMs)) best = i;
  });
  return best;
}

/**
 * Fork `source` once per strategy (a single `fork({ count })` call), run all strategies concurrently,
 * score each, keep the winner (per `opts.keep`) and kill the other forks. A strategy that throws, or
 * whose score throws or is not a number, is failed: its entry gets `error` (`code` when it was a
 * `RamifyError`, e.g. `COMMAND_EXIT`) and `score: -Infinity`, it cannot win, and its fork is handled
 * like any loser's (`outcome` `killed`, or `kept` with `keep: 'all'`; see {@link ForkOutcome}). A
 * failed kill is recorded in the entry's `killError`, not thrown.
 * @returns an {@link ExploreReport}; with `opts.budget`, an {@link ExploreStoppedReport} instead when the
 *   budget ran out before every strategy ended (see {@link ExploreOpts.budget}).
 * @throws {@link ExploreFailedError} when every strategy failed and no budget stopped any, `BAD_REQUEST`
 *   for 0 or more than 64 strategies, and the API's error when the fork fails (nothing ran:
 *   `BUDGET_EXCEEDED` when the budget is already out).
 */
export function explore<T>(source: Sandbox, strategies: Strategy<T>[], opts: ExploreOpts<T> & { budget?: undefined }): Promise<ExploreReport<T>>;
export function explore<T>(source: Sandbox, strategies: Strategy<T>[], opts: ExploreOpts<T>): Promise<ExploreReport<T> | ExploreStoppedReport<T>>;
export async function explore<T>(source: Sandbox, strategies: Strategy<T>[], opts: ExploreOpts<T>): Promise<ExploreReport<T> | ExploreStoppedReport<T>> {
  if (strategies.length === 0 || strategies.length > MAX_FORK_COUNT) {
    throw new RamifyError('BAD_REQUEST', `explore needs 1 to ${MAX_FORK_COUNT} strategies, got ${strategies.length}`);
  }
  if (opts.budget) await source.setBudget(opts.budget);
  const forks = await source.fork({ count: strategies.length });
  if (forks.length !== strategies.length) {
    await Promise.allSettled(forks.map((f) => f.kill()));
    throw new RamifyError('INTERNAL', `fork returned ${forks.length} sandboxes for ${strategies.length} strategies`);
  }
  const watch = opts.budget ? watchBudget(source, opts.budgetPollMs ?? 1000) : null;
  const started = performance.now();
  const attempts = await Promise.all(strategies.map((s, i) => {
    const running = attempt(s, forks[i], opts, watch);
    if (!watch) return running;
    const cut = watch.exceeded.then((info) => {
      // The daemon paused the fork: its commands would wait for a resume that only a raised budget brings.
      const { code, message } = stoppedByBudget(info);
      forks[i]?.abandonHandles(errorFromCode(code, message, { sandboxId: forks[i]?.sandboxId }));
      return stopped<T>(s.name, forks[i], performance.now() - started, info);
    });
    return Promise.race([running, cut]);
  })).finally(() => watch?.stop());
  const entries = attempts.map((a) => a.entry);
  const winnerIndex = pickWinner(entries);
  const keep = opts.keep ?? 'winner';
  await Promise.all(attempts.map(async (a, i) => {
    if (a.entry.status === 'stopped') return;
    const isWinner = i === winnerIndex;
    if (keep === 'all' || (keep === 'winner' && isWinner)) {
      a.entry.outcome = isWinner ? 'winner' : 'kept';
      return;
    }
    a.entry.outcome = 'killed';
    try { await a.sandbox.kill(); } catch (err) { a.entry.killError = failure(err); }
  }));
  const w = winnerIndex >= 0 ? attempts[winnerIndex] : undefined;
  const winner: ExploreWinner<T> | null = w ? { sandbox: w.sandbox, strategy: w.entry.name, score: w.entry.score, result: w.result as T, durationMs: w.entry.durationMs } : null;
  const forkTree: ForkTreeNode = {
    sandboxId: source.sandboxId, strategy: null, score: null, outcome: 'source', error: null,
    children: entries.map((e) => ({ sandboxId: e.sandboxId, strategy: e.name, score: e.score, outcome: e.outcome, error: e.error?.message ?? null, children: [] })),
  };
  const budget = watch?.found ?? null;
  if (budget && entries.some((e) => e.status === 'stopped')) return { winner, entries, forkTree, stoppedBy: 'budget', budget };
  if (!winner) throw new ExploreFailedError(entries);
  return { winner, entries, forkTree, stoppedBy: null };
}
