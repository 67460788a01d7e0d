/**
 * Metering, live metrics and budget routes (docs/design/USAGE.md): the caller's team's usage report, a
 * sandbox's samples of the last hour, its fork tree with usage, and the budgets of its tree. The scope hook
 * checks the sandbox in the path belongs to the caller's team; the report is the caller's team's only.
 */
import { BudgetInfo, MetricsQuery, SandboxBudgetsResponse, SandboxMetricsResponse, SandboxTreeResponse, SetBudgetRequest, UsageQuery, UsageResponse } from '@ramify/contracts';
import { getBudgets, getSandboxMetrics, getSandboxTree, getUsage, removeBudget, setBudget } from '@ramify/core';
import { IdParams, route, type RouteSpec } from '../http/route.js';

export const usageRoutes: RouteSpec[] = [
  route({
    operation: 'getUsage', summary: "The caller's team's metered usage over a window, grouped by sandbox, tree, template, team or day",
    description: 'from/to: ISO 8601 times or ms since the epoch (default the last 30 days), widened to whole UTC hours; groupBy: sandbox (default), tree (the root sandbox of each fork tree), template, team, day (UTC); sandboxId: one sandbox only. Live sandboxes count up to now.',
    query: UsageQuery, response: UsageResponse,
    handler: async ({ core, query, actor }) => getUsage(core, actor.teamId, query),
  }),
  route({
    operation: 'getSandboxMetrics', summary: "A sandbox's samples (every 5 s while running, the last hour): CPU %, memory and disk used and total",
    description: "E2B's SandboxMetrics fields. Kept in the daemon's memory: a restart starts the window afresh. start/end: ISO 8601 times or ms since the epoch.",
    params: IdParams, query: MetricsQuery, response: SandboxMetricsResponse,
    handler: async ({ core, params, query }) => ({ metrics: await getSandboxMetrics(core, params.id, query) }),
  }),
  route({
    operation: 'getSandboxTree', summary: 'The fork tree the sandbox is in, from its root: each sandbox with its state, usage and budget',
    params: IdParams, response: SandboxTreeResponse,
    handler: async ({ core, params }) => getSandboxTree(core, params.id),
  }),
  route({
    operation: 'getBudgets', summary: 'The budgets covering a sandbox (its own, then its ancestors\'), with what their trees used',
    params: IdParams, response: SandboxBudgetsResponse,
    handler: async ({ core, params }) => ({ budgets: await getBudgets(core, params.id) }),
  }),
  route({
    operation: 'setBudget', summary: 'Set or raise the budget of a sandbox and everything forked from it; fields not given stay, null removes a limit',
    description: 'A new budget counts from now. Over cpuSeconds or sandboxSeconds the tree is paused and forks and resumes in it are 429 BUDGET_EXCEEDED; raising the budget above what it used lets them resume.',
    params: IdParams, body: SetBudgetRequest, response: BudgetInfo,
    handler: async ({ core, params, body }) => setBudget(core, params.id, body),
  }),
  route({
    operation: 'removeBudget', summary: 'Remove the budget set on a sandbox (idempotent; its ancestors\' still cover it)',
    params: IdParams, status: 204,
    handler: async ({ core, params }) => {
      await removeBudget(core, params.id);
    },
  }),
];
