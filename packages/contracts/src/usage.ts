/**
 * The metering, live metrics and budgets contract (docs/design/USAGE.md). Every sandbox is metered per
 * second: time running and paused, CPU-seconds, memory allocated (MiB·s) and its peak use, the pause
 * image's bytes·s while paused, bytes in and out. `GET /v1/usage` reports it for the caller's team;
 * `GET /v1/sandboxes/{id}/metrics` gives the last hour's samples (E2B's `SandboxMetrics` field names);
 * a budget caps a fork tree (a sandbox and everything forked from it): over it, the tree is paused.
 */
import { z } from 'zod';
import { MAX_BUDGET_VALUE } from './constants.js';

/**
 * A budget figure: a positive number, or null for no limit. No message of its own: the plain map
 * (issue-messages.ts) says the range, that null is allowed, and what was received.
 */
const Seconds = z.number().positive().max(MAX_BUDGET_VALUE).nullable();

/**
 * Limits of a fork tree: a sandbox and every sandbox forked from it (and from those), counted from when the
 * budget was set (at create: everything). A null or absent field is no limit. Over `cpuSeconds` or
 * `sandboxSeconds` the whole tree is paused (never killed) and further forks and resumes in it are 429
 * `BUDGET_EXCEEDED` until the budget is raised; a fork that would take the tree over `maxSandboxes` is
 * refused the same way (nothing is paused).
 */
export const Budget = z.strictObject({
  /** CPU time of the tree's sandboxes together, seconds (from their runtime's cgroup or process accounting). */
  cpuSeconds: Seconds.optional(),
  /** Time the tree's sandboxes hold CPU and memory (creating, running, pausing, resuming), summed, seconds. */
  sandboxSeconds: Seconds.optional(),
  /** Sandboxes of the tree alive at once (not killed or failed), the root included: a whole number from 1. */
  maxSandboxes: z.number().int().min(1).max(MAX_BUDGET_VALUE).nullable().optional(),
});
export type Budget = z.infer<typeof Budget>;

/** The limits a budget can break. */
export const BudgetLimit = z.enum(['cpuSeconds', 'sandboxSeconds', 'maxSandboxes']);
export type BudgetLimit = z.infer<typeof BudgetLimit>;

/**
 * `PATCH /v1/sandboxes/{id}/budget`: the limits to change (absent: unchanged; null: no limit), at least
 * one. Makes the budget when the sandbox has none.
 */
export const SetBudgetRequest = Budget.refine((b) => Object.keys(b).length > 0, { message: 'name at least one limit: cpuSeconds, sandboxSeconds or maxSandboxes (null for no limit)' });
export type SetBudgetRequest = z.infer<typeof SetBudgetRequest>;

/** A budget, what its tree used since it was set, and whether it is exceeded. */
export const BudgetInfo = z.object({
  /** The sandbox the budget is set on: the root of the tree it covers. */
  sandboxId: z.string(),
  limits: z.object({ cpuSeconds: z.number().nullable(), sandboxSeconds: z.number().nullable(), maxSandboxes: z.number().int().nullable() }),
  /** Since `since`: CPU-seconds and sandbox-seconds of the tree; `sandboxes`: alive now. */
  used: z.object({ cpuSeconds: z.number(), sandboxSeconds: z.number(), sandboxes: z.number().int() }),
  /** The limit the tree is over (cpuSeconds or sandboxSeconds), or null. */
  exceeded: BudgetLimit.nullable(),
  /** ISO time the budget counts from. */
  since: z.string(),
});
export type BudgetInfo = z.infer<typeof BudgetInfo>;

/** `GET /v1/sandboxes/{id}/budget`: every budget that covers the sandbox (its own first, then its ancestors'). */
export const SandboxBudgetsResponse = z.object({ budgets: z.array(BudgetInfo) });
export type SandboxBudgetsResponse = z.infer<typeof SandboxBudgetsResponse>;

/** How `GET /v1/usage` groups its rows. `tree`: by the root of each fork tree; `day`: by UTC day. */
export const UsageGroupBy = z.enum(['sandbox', 'tree', 'template', 'team', 'day']);
export type UsageGroupBy = z.infer<typeof UsageGroupBy>;

/** A time in a query: an ISO 8601 time (`2025-07-01`, `2025-07-01T12:00:00Z`) or ms since the epoch. */
export const QueryTime = z.string().min(1).max(64);

/** `GET /v1/usage` query. */
export const UsageQuery = z.strictObject({
  /** Start (inclusive, rounded down to the hour); default 30 days before `to`. */
  from: QueryTime.optional(),
  /** End (exclusive, rounded up to the hour); default now. */
  to: QueryTime.optional(),
  /** Default `sandbox`. */
  groupBy: UsageGroupBy.optional(),
  /** Only this sandbox's usage. */
  sandboxId: z.string().min(1).max(128).optional(),
});
export type UsageQuery = z.infer<typeof UsageQuery>;

/** Metered figures of a group of sandboxes over the query's window. */
export const UsageFigures = z.object({
  /** Time holding CPU and memory (creating, running, pausing, resuming), seconds. */
  runningSeconds: z.number(),
  /** Time paused, seconds. */
  pausedSeconds: z.number(),
  /** CPU time, seconds. */
  cpuSeconds: z.number(),
  /** Memory allocated (`memoryMB`) times running seconds, MiB·s. */
  memoryMiBSeconds: z.number(),
  /** Largest memory in use any of them reached, bytes (0: never read). */
  memoryPeakBytes: z.number().int(),
  /** Pause image bytes times paused seconds, byte·s. */
  diskByteSeconds: z.number(),
  /** Bytes received by the sandboxes (their network card), and sent. */
  netInBytes: z.number().int(),
  netOutBytes: z.number().int(),
});
export type UsageFigures = z.infer<typeof UsageFigures>;

/** One row of `GET /v1/usage`: the group's key and figures. */
export const UsageRow = UsageFigures.extend({
  /** The group: a sandbox id, a tree's root sandbox id, a template id, a team id, or a UTC day (`2025-07-01`). */
  key: z.string(),
  /** Sandboxes that contributed. */
  sandboxes: z.number().int(),
});
export type UsageRow = z.infer<typeof UsageRow>;

export const UsageResponse = z.object({
  /** The window the figures cover (hour-aligned ISO times; `to` exclusive). */
  from: z.string(),
  to: z.string(),
  groupBy: UsageGroupBy,
  team: z.string(),
  rows: z.array(UsageRow),
});
export type UsageResponse = z.infer<typeof UsageResponse>;

/** `GET /v1/sandboxes/{id}/metrics` query. */
export const MetricsQuery = z.strictObject({
  /** First sample time (inclusive); default the oldest kept. */
  start: QueryTime.optional(),
  /** Last sample time (inclusive); default now. */
  end: QueryTime.optional(),
});
export type MetricsQuery = z.infer<typeof MetricsQuery>;

/** One sample of a running sandbox (E2B's `SandboxMetrics`): taken every sampling interval (5 s by default). */
export const SandboxMetric = z.object({
  /** ISO time of the sample. */
  timestamp: z.string(),
  cpuCount: z.number().int(),
  /** CPU used since the previous sample, percent of `cpuCount` cores (0-100). */
  cpuUsedPct: z.number(),
  /** Memory in use, bytes (gVisor: its cgroup's, file changes included; microVM: QEMU's resident memory). */
  memUsed: z.number().int(),
  /** Memory the sandbox has (`memoryMB`), bytes. */
  memTotal: z.number().int(),
  /** Disk in use, bytes; null for a runtime without a disk of its own (gVisor: file changes live in memory). */
  diskUsed: z.number().int().nullable(),
  /** Disk size, bytes; null as `diskUsed`. */
  diskTotal: z.number().int().nullable(),
});
export type SandboxMetric = z.infer<typeof SandboxMetric>;

export const SandboxMetricsResponse = z.object({ metrics: z.array(SandboxMetric) });
export type SandboxMetricsResponse = z.infer<typeof SandboxMetricsResponse>;

/** One node of `GET /v1/sandboxes/{id}/tree`. */
export interface SandboxTreeNode {
  sandboxId: string;
  parentId: string | null;
  state: string;
  templateId: string;
  createdAt: string;
  usage: UsageFigures;
  /** The budget set on this sandbox, if any. */
  budget: BudgetInfo | null;
  children: SandboxTreeNode[];
}
export const SandboxTreeNode: z.ZodType<SandboxTreeNode> = z.lazy(() =>
  z.object({
    sandboxId: z.string(),
    parentId: z.string().nullable(),
    state: z.string(),
    templateId: z.string(),
    createdAt: z.string(),
    usage: UsageFigures,
    budget: BudgetInfo.nullable(),
    children: z.array(SandboxTreeNode),
  }),
);

/** `GET /v1/sandboxes/{id}/tree`: the whole fork tree the sandbox is in, from its root. */
export const SandboxTreeResponse = z.object({
  /** The root's id. */
  rootId: z.string(),
  /** How many sandboxes the tree has (killed ones included). */
  size: z.number().int(),
  root: SandboxTreeNode,
});
export type SandboxTreeResponse = z.infer<typeof SandboxTreeResponse>;
