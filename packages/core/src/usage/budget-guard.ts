/**
 * Budget enforcement. Admission: a fork, a resume, or a create from a snapshot of a tree's sandbox is
 * refused 429 `BUDGET_EXCEEDED` while any budget covering it is exceeded, and a fork that would take a tree
 * over `maxSandboxes` is refused the same way; the check runs under one lock per fork tree, counting the
 * children of admitted forks still in flight (as team quotas do), before anything is touched.
 * Enforcement: after each sample, the budgets covering a running sandbox are checked; a tree at or over
 * `cpuSeconds` or `sandboxSeconds` is marked exceeded (persisted, then one `budget` event) and its running
 * sandboxes are paused. Never killed: a pause refused (`CHECKPOINT_BLOCKED`, or any failure) leaves the
 * sandbox running and is tried again after `timeoutRetryMs`, as timeout pauses are.
 */
import type { Core } from '../context.js';
import { pauseLocked } from '../lifecycle/pause.js';
import { withCause } from '../observe/call-context.js';
import { loadSandbox, messageOf } from '../lifecycle/records.js';
import type { SandboxRecord } from '../ports/store.js';
import { aliveInTree, budgetExceeded, budgetStatus } from './budgets.js';

/** Fork children admitted and still in flight, per core: budget root → child ids. */
const reservations = new WeakMap<Core, Map<string, Set<string>>>();

function reservedOf(core: Core, root: string): Set<string> {
  let roots = reservations.get(core);
  if (!roots) reservations.set(core, (roots = new Map()));
  let ids = roots.get(root);
  if (!ids) roots.set(root, (ids = new Set()));
  return ids;
}

/**
 * Run `fn` (a fork making `childIds` in `sandboxId`'s tree, or a resume of it with none) once every budget
 * covering the sandbox allows it, holding the children's room until `fn` settles.
 * @throws RamifyError `BUDGET_EXCEEDED` (429; `fn` never ran), and `fn`'s errors.
 */
export async function withinBudget<T>(core: Core, sandboxId: string, childIds: readonly string[], fn: () => Promise<T>): Promise<T> {
  const budgets = await core.store.budgetsCovering([sandboxId]);
  if (budgets.length === 0) return fn();
  const tree = (await core.store.treeRoots([sandboxId])).get(sandboxId) ?? sandboxId;
  await core.locks.run(`budget-tree:${tree}`, async () => {
    for (const budget of budgets) {
      const status = await budgetStatus(core, (await core.store.getBudget(budget.sandboxId)) ?? budget);
      if (status.over !== null) throw budgetExceeded(status, status.over);
      const max = status.budget.maxSandboxes;
      if (max === null || childIds.length === 0) continue;
      const alive = new Set([...status.members.filter(aliveInTree).map((m) => m.id), ...reservedOf(core, budget.sandboxId)]);
      if (alive.size + childIds.length > max) throw budgetExceeded({ ...status, alive: alive.size }, 'maxSandboxes', childIds.length);
    }
    for (const budget of budgets) for (const id of childIds) reservedOf(core, budget.sandboxId).add(id);
  });
  try {
    return await fn();
  } finally {
    for (const budget of budgets) for (const id of childIds) reservedOf(core, budget.sandboxId).delete(id);
  }
}

/**
 * Refuse a create from a snapshot taken of a sandbox whose tree is over its budget (it would run the
 * tree's work on outside the budget).
 * @throws RamifyError `BUDGET_EXCEEDED`.
 */
export async function assertSnapshotWithinBudget(core: Core, snapshotSandboxId: string | null): Promise<void> {
  if (snapshotSandboxId === null) return;
  for (const budget of await core.store.budgetsCovering([snapshotSandboxId])) {
    const status = await budgetStatus(core, budget);
    if (status.over !== null) throw budgetExceeded(status, status.over);
  }
}

/**
 * Check the budgets covering `sampled` (the sandboxes just read): mark each tree newly over one exceeded
 * (persisted, then the event) and pause its running sandboxes. Never rejects.
 * @param retryAt per sandbox, when a refused pause may be tried again (ms); kept by the caller across runs.
 */
export async function enforceBudgets(core: Core, sampled: readonly SandboxRecord[], retryAt: Map<string, number>): Promise<void> {
  if (sampled.length === 0) return;
  try {
    for (const budget of await core.store.budgetsCovering(sampled.map((s) => s.id))) {
      const status = await budgetStatus(core, budget);
      if (status.over === null) continue;
      const now = core.clock.now();
      if (budget.exceeded === null) {
        await core.store.putBudget({ ...budget, exceeded: status.over, updatedAt: now });
        const [max, used] = status.over === 'cpuSeconds' ? [budget.cpuSeconds ?? 0, status.cpuSeconds] : [budget.sandboxSeconds ?? 0, status.sandboxSeconds];
        core.events.emitBudget({ rootId: budget.sandboxId, teamId: budget.teamId, limit: status.over, max, used, at: now });
        core.logger.warn('fork tree over its budget: pausing it', { rootId: budget.sandboxId, limit: status.over, max, used });
      }
      const due = status.members.filter((m) => m.state === 'running' && (retryAt.get(m.id) ?? 0) <= now);
      await Promise.all(due.map((m) => pauseForBudget(core, m.id, retryAt)));
    }
  } catch (err) {
    core.logger.error('budget enforcement failed', { error: messageOf(err) });
  }
}

/**
 * Pause the sandbox if, under its lock, it is still running (its events say cause `budget`); a failure is
 * retried after `timeoutRetryMs`.
 */
async function pauseForBudget(core: Core, sandboxId: string, retryAt: Map<string, number>): Promise<void> {
  try {
    await withCause('budget', () => core.locks.run(sandboxId, async () => {
      const record = await loadSandbox(core, sandboxId);
      if (record.state === 'running') await pauseLocked(core, record);
    }));
    retryAt.delete(sandboxId);
  } catch (err) {
    retryAt.set(sandboxId, core.clock.now() + core.options.timeoutRetryMs);
    core.logger.warn('budget pause failed; will retry', { sandboxId, error: messageOf(err) });
  }
}
