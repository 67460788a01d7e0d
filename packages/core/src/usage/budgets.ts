/**
 * Budgets per fork tree (docs/design/USAGE.md): a budget set on a sandbox covers it and every sandbox forked
 * from it, counted from when it was set (at create: everything). This module keeps them (set, raise,
 * remove, read) and says where a tree stands: its CPU-seconds and sandbox-seconds since the budget was set,
 * its sandboxes alive, and the limit it is over. `budget-guard.ts` enforces them.
 */
import { RamifyError, type Budget, type BudgetInfo, type BudgetLimit, type SetBudgetRequest } from '@ramify/contracts';
import type { Core } from '../context.js';
import { loadSandbox } from '../lifecycle/records.js';
import { assertNotKilled, isTerminal } from '../lifecycle/state-machine.js';
import type { BudgetRecord, SandboxRecord } from '../ports/store.js';
import { sandboxTotals } from './totals.js';

/** Where a budget's tree stands now. */
export interface BudgetStatus {
  budget: BudgetRecord;
  /** The tree: the budget's sandbox and its descendants (killed ones included). */
  members: SandboxRecord[];
  cpuSeconds: number;
  sandboxSeconds: number;
  /** Members alive (neither killed nor failed). */
  alive: number;
  /** The limit it is at or over, or null. */
  over: 'cpuSeconds' | 'sandboxSeconds' | null;
}

type BudgetCore = Pick<Core, 'store' | 'meter' | 'clock'>;

/** Whether a sandbox counts against `maxSandboxes`. */
export const aliveInTree = (record: SandboxRecord): boolean => !isTerminal(record.state) && record.state !== 'error';

/** The tree's CPU time and running time now, all time (µs, ms). */
async function treeTotals(core: BudgetCore, members: readonly SandboxRecord[]): Promise<{ cpuUs: number; runningMs: number }> {
  let cpuUs = 0;
  let runningMs = 0;
  for (const t of (await sandboxTotals(core, members)).values()) {
    cpuUs += t.cpuUs;
    runningMs += t.runningMs;
  }
  return { cpuUs, runningMs };
}

/**
 * Read the counters of the running sandboxes among `members` now (`UsageMeter.readNow`), so totals taken
 * next are exact up to now rather than up to the last sample. Never rejects.
 */
export async function readRunning(core: BudgetCore, members: readonly SandboxRecord[]): Promise<void> {
  await core.meter.readNow(members.filter((m) => m.state === 'running'));
}

/** Where `budget`'s tree stands now. */
export async function budgetStatus(core: BudgetCore, budget: BudgetRecord): Promise<BudgetStatus> {
  const members = await core.store.subtree(budget.sandboxId);
  const totals = await treeTotals(core, members);
  const cpuSeconds = Math.max(0, totals.cpuUs - budget.baseCpuUs) / 1e6;
  const sandboxSeconds = Math.max(0, totals.runningMs - budget.baseRunningMs) / 1000;
  const over = budget.cpuSeconds !== null && cpuSeconds >= budget.cpuSeconds ? 'cpuSeconds'
    : budget.sandboxSeconds !== null && sandboxSeconds >= budget.sandboxSeconds ? 'sandboxSeconds' : null;
  return { budget, members, cpuSeconds, sandboxSeconds, alive: members.filter(aliveInTree).length, over };
}

/** The API shape of a budget and its status. */
export function toBudgetInfo(status: BudgetStatus): BudgetInfo {
  const b = status.budget;
  return {
    sandboxId: b.sandboxId,
    limits: { cpuSeconds: b.cpuSeconds, sandboxSeconds: b.sandboxSeconds, maxSandboxes: b.maxSandboxes },
    used: { cpuSeconds: round3(status.cpuSeconds), sandboxSeconds: round3(status.sandboxSeconds), sandboxes: status.alive },
    exceeded: status.over,
    since: new Date(b.since).toISOString(),
  };
}

const round3 = (n: number): number => Math.round(n * 1000) / 1000;

/** The 429 of a tree over its budget (or a fork that would take it over `maxSandboxes`). */
export function budgetExceeded(status: BudgetStatus, limit: BudgetLimit, requested = 0): RamifyError {
  const b = status.budget;
  const [max, used] =
    limit === 'cpuSeconds' ? [b.cpuSeconds, round3(status.cpuSeconds)] : limit === 'sandboxSeconds' ? [b.sandboxSeconds, round3(status.sandboxSeconds)] : [b.maxSandboxes, status.alive];
  const what = limit === 'maxSandboxes'
    ? `the tree of '${b.sandboxId}' has ${used} sandboxes alive and its budget maxSandboxes is ${max}: ${requested} more would go over it (nothing was forked)`
    : `the tree of '${b.sandboxId}' is over its budget: ${limit} ${used} of ${max} (its sandboxes are paused; raise the budget to go on)`;
  return new RamifyError('BUDGET_EXCEEDED', what, { sandboxId: b.sandboxId, limit, max, used, ...(requested > 0 ? { requested } : {}) });
}

/**
 * The budget of a sandbox being created (its tree is itself: counted from zero). The caller stores it
 * right after the sandbox's row, before the sandbox runs.
 */
export function newSandboxBudget(sandboxId: string, teamId: string, budget: Budget, at: number): BudgetRecord {
  return {
    sandboxId, teamId, since: at, baseCpuUs: 0, baseRunningMs: 0, exceeded: null, updatedAt: at,
    cpuSeconds: budget.cpuSeconds ?? null, sandboxSeconds: budget.sandboxSeconds ?? null, maxSandboxes: budget.maxSandboxes ?? null,
  };
}

/**
 * Set or change the budget on a sandbox: the limits given change (null removes one), the others stay. A new
 * budget counts from now (the tree's usage so far is its base); a changed one keeps its start. A budget
 * raised above what its tree used is no longer exceeded (its sandboxes may be resumed).
 * @returns the budget and its tree's status.
 * @throws RamifyError `SANDBOX_NOT_FOUND` (also killed).
 */
export async function setBudget(core: Core, sandboxId: string, patch: SetBudgetRequest): Promise<BudgetInfo> {
  return core.locks.run(`budget:${sandboxId}`, async () => {
    const record = await loadSandbox(core, sandboxId);
    assertNotKilled(sandboxId, record.state);
    const now = core.clock.now();
    const existing = await core.store.getBudget(sandboxId);
    const base = existing ?? { ...(await baseOf(core, sandboxId)), since: now, exceeded: null };
    const next: BudgetRecord = {
      sandboxId, teamId: record.teamId, since: base.since, baseCpuUs: base.baseCpuUs, baseRunningMs: base.baseRunningMs, exceeded: base.exceeded, updatedAt: now,
      cpuSeconds: patch.cpuSeconds !== undefined ? patch.cpuSeconds : (existing?.cpuSeconds ?? null),
      sandboxSeconds: patch.sandboxSeconds !== undefined ? patch.sandboxSeconds : (existing?.sandboxSeconds ?? null),
      maxSandboxes: patch.maxSandboxes !== undefined ? patch.maxSandboxes : (existing?.maxSandboxes ?? null),
    };
    const status = await budgetStatus(core, next);
    // Still over: the flag (and its one event) stays; no longer over: cleared.
    const stored = { ...next, exceeded: status.over === null ? null : next.exceeded };
    await core.store.putBudget(stored);
    return toBudgetInfo({ ...status, budget: stored });
  });
}

/** The tree's CPU and running time now (its running sandboxes read first): the base of a budget set now. */
async function baseOf(core: BudgetCore, sandboxId: string): Promise<{ baseCpuUs: number; baseRunningMs: number }> {
  const members = await core.store.subtree(sandboxId);
  await readRunning(core, members);
  const totals = await treeTotals(core, members);
  return { baseCpuUs: totals.cpuUs, baseRunningMs: totals.runningMs };
}

/** Remove the budget set on a sandbox (its ancestors' still cover it); idempotent. @throws RamifyError `SANDBOX_NOT_FOUND`. */
export async function removeBudget(core: Core, sandboxId: string): Promise<void> {
  await core.locks.run(`budget:${sandboxId}`, async () => {
    assertNotKilled(sandboxId, (await loadSandbox(core, sandboxId)).state);
    await core.store.deleteBudget(sandboxId);
  });
}

/** Every budget covering a sandbox (its own first, then its ancestors'), with its tree's status. @throws RamifyError `SANDBOX_NOT_FOUND`. */
export async function getBudgets(core: Core, sandboxId: string): Promise<BudgetInfo[]> {
  assertNotKilled(sandboxId, (await loadSandbox(core, sandboxId)).state);
  const out: BudgetInfo[] = [];
  for (const b of await core.store.budgetsCovering([sandboxId])) out.push(toBudgetInfo(await budgetStatus(core, b)));
  return out;
}
