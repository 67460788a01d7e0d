/**
 * Metering, live metrics, fork trees and budgets (docs/design/USAGE.md). `getUsage` reports the key's
 * team's usage; the per-sandbox calls are methods of {@link Sandbox} (`getMetrics`, `getUsage`, `getTree`,
 * `setBudget`, `getBudgets`, `removeBudget`) built on the functions here.
 */
import { ROUTES } from '@ramify/contracts/client';
import type {
  Budget, BudgetInfo, SandboxBudgetsResponse, SandboxMetric, SandboxMetricsResponse, SandboxTreeResponse, UsageFigures, UsageGroupBy, UsageResponse,
} from '@ramify/contracts';
import { resolveConnection, type ConnectionOpts } from './connection.js';
import { ApiClient } from './http.js';

/** A time given to a query: a `Date`, ms since the epoch, or an ISO 8601 string. */
export type TimeArg = Date | number | string;

/** One live metrics sample, as E2B's `SandboxMetrics` (its `timestamp` a `Date`). */
export interface SandboxMetrics extends Omit<SandboxMetric, 'timestamp'> {
  timestamp: Date;
}

/** Options of {@link getUsage}. */
export interface UsageOpts {
  /** Window start (rounded down to the hour); default 30 days before `to`. */
  from?: TimeArg;
  /** Window end (exclusive, rounded up to the hour); default now. */
  to?: TimeArg;
  /** `sandbox` (default), `tree` (by fork tree root), `template`, `team` or `day` (UTC). */
  groupBy?: UsageGroupBy;
  /** Only this sandbox. */
  sandboxId?: string;
}

const timeParam = (t: TimeArg | undefined): string | undefined =>
  t === undefined ? undefined : t instanceof Date ? String(t.getTime()) : String(t);


/**
 * The key's team's metered usage over a window of whole UTC hours: per group, running and paused seconds,
 * CPU-seconds, memory MiB·s and peak bytes, pause image byte·s, bytes in and out, and how many sandboxes.
 * Live sandboxes count up to now. Throws `VALIDATION_FAILED` for a malformed time or `from` not before `to`.
 */
export function getUsage(opts: UsageOpts & ConnectionOpts = {}): Promise<UsageResponse> {
  const { from, to, groupBy, sandboxId, ...conn } = opts;
  return new ApiClient(resolveConnection(conn)).at(ROUTES.getUsage, {}).json<UsageResponse>({ query: { from: timeParam(from), to: timeParam(to), groupBy, sandboxId } });
}

/** A sandbox's samples between `start` and `end` (default all kept: the last hour), oldest first. */
export async function fetchMetrics(api: ApiClient, sandboxId: string, opts: { start?: TimeArg; end?: TimeArg } = {}): Promise<SandboxMetrics[]> {
  const res = await api.at(ROUTES.getSandboxMetrics, { id: sandboxId }).json<SandboxMetricsResponse>({ query: { start: timeParam(opts.start), end: timeParam(opts.end) } });
  return res.metrics.map((m) => ({ ...m, timestamp: new Date(m.timestamp) }));
}

/** All-zero figures (a sandbox nothing was metered for yet). */
const NO_USAGE: UsageFigures = { runningSeconds: 0, pausedSeconds: 0, cpuSeconds: 0, memoryMiBSeconds: 0, memoryPeakBytes: 0, diskByteSeconds: 0, netInBytes: 0, netOutBytes: 0 };

/** One sandbox's figures over a window (all zero when nothing was metered). */
export async function fetchSandboxUsage(api: ApiClient, sandboxId: string, opts: Pick<UsageOpts, 'from' | 'to'> = {}): Promise<UsageFigures> {
  const res = await api.at(ROUTES.getUsage, {}).json<UsageResponse>({ query: { from: timeParam(opts.from), to: timeParam(opts.to), sandboxId } });
  const row = res.rows[0];
  if (!row) return { ...NO_USAGE };
  const { key: _key, sandboxes: _n, ...figures } = row;
  return figures;
}

/** The fork tree a sandbox is in, from its root, each node with its state, usage and budget. */
export function fetchTree(api: ApiClient, sandboxId: string): Promise<SandboxTreeResponse> {
  return api.at(ROUTES.getSandboxTree, { id: sandboxId }).json<SandboxTreeResponse>();
}

/** Set or change the budget on a sandbox (the limits given; null removes one). */
export function patchBudget(api: ApiClient, sandboxId: string, budget: Budget): Promise<BudgetInfo> {
  return api.at(ROUTES.setBudget, { id: sandboxId }).json<BudgetInfo>({ json: budget });
}

/** The budgets covering a sandbox: its own first, then its ancestors'. */
export async function fetchBudgets(api: ApiClient, sandboxId: string): Promise<BudgetInfo[]> {
  return (await api.at(ROUTES.getBudgets, { id: sandboxId }).json<SandboxBudgetsResponse>()).budgets;
}

/** Remove the budget set on a sandbox (idempotent). */
export function deleteBudget(api: ApiClient, sandboxId: string): Promise<void> {
  return api.at(ROUTES.removeBudget, { id: sandboxId }).empty();
}
