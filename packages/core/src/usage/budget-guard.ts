/**
 * Budget enforcement. Admission: a fork, a resume, or a create from a snapshot of a tree's sandbox is
 * refused 429 `BUDGET_EXCEEDED` while any budget covering it is exceeded, and a fork that would take a tree
 * over `maxSandboxes` is refused the same way; the check runs under one lock per fork tree, and the
 * `maxSandboxes` part in one store transaction holding the budgets' rows, counting the children of
 * admitted forks still in flight on any process (reserved in the store, as team quotas are), before
 * anything is touched. A fork or
 * resume first reads the counters of the tree's running sandboxes (`UsageMeter.readNow`), so it judges the
 * tree's CPU up to now, not up to the last sample: a tree that went over since is refused at once (and
 * marked and paused), and a fork's children are read and judged right after they start
 * ({@link checkBudgetsNow}), so a fork whose restores take the tree over does not run on unseen until the
 * next sample.
 * Enforcement: after each sample, and right after a fork, the budgets covering the sandboxes read are
 * checked; a tree at or over `cpuSeconds` or `sandboxSeconds` is marked exceeded (persisted, then one
 * `budget` event) and its running sandboxes are paused. Never killed: a pause refused
 * (`CHECKPOINT_BLOCKED`, or any failure) leaves the sandbox running and is tried again after
 * `timeoutRetryMs`, as timeout pauses are.
 */
import type { SandboxState } from '@ramify/contracts';
import type { Core } from '../context.js';
import { pauseLocked } from '../lifecycle/pause.js';
import { withCause } from '../observe/call-context.js';
import { loadSandbox, messageOf } from '../lifecycle/records.js';
import type { BudgetRecord, SandboxRecord } from '../ports/store.js';
import { aliveInTree, budgetExceeded, budgetStatus, readRunning, type BudgetStatus } from './budgets.js';

/** How long a fork's reservation of its children lives without renewal, ms (renewed every third of it while the fork runs). */
const TREE_RESERVATION_LEASE_MS = 30_000;

/** Member states that count against no `maxSandboxes` (see `aliveInTree`). */
const DEAD_STATES: readonly SandboxState[] = ['killed', 'error'];

/** Per core: when a refused budget pause of a sandbox may be tried again (ms). */
const retries = new WeakMap<Core, Map<string, number>>();

function retryAtOf(core: Core): Map<string, number> {
  let retryAt = retries.get(core);
  if (!retryAt) retries.set(core, (retryAt = new Map()));
  return retryAt;
}

/** Read the counters of the running sandboxes of `budgets`' trees now (see `UsageMeter.readNow`). */
async function readTrees(core: Core, budgets: readonly BudgetRecord[]): Promise<void> {
  if (!core.meter.enabled) return;
  const members = new Map<string, SandboxRecord>();
  for (const budget of budgets) for (const member of await core.store.subtree(budget.sandboxId)) members.set(member.id, member);
  await readRunning(core, [...members.values()]);
}

/**
 * Run `fn` (a fork making `childIds` in `sandboxId`'s tree, or a resume of it with none) once every budget
 * covering the sandbox allows it, holding the children's room until `fn` settles. The tree's running
 * sandboxes are read first: one found over its budget now is marked exceeded and paused (in the
 * background: the caller holds a lock the pause needs) and the call refused.
 * @throws RamifyError `BUDGET_EXCEEDED` (429; `fn` never ran), and `fn`'s errors.
 */
export async function withinBudget<T>(core: Core, sandboxId: string, childIds: readonly string[], fn: () => Promise<T>): Promise<T> {
  const budgets = await core.store.budgetsCovering([sandboxId]);
  if (budgets.length === 0) return fn();
  const tree = (await core.store.treeRoots([sandboxId])).get(sandboxId) ?? sandboxId;
  const statuses = new Map<string, BudgetStatus>();
  await core.locks.run(`budget-tree:${tree}`, async () => {
    await readTrees(core, budgets);
    for (const budget of budgets) {
      const status = await budgetStatus(core, (await core.store.getBudget(budget.sandboxId)) ?? budget);
      if (status.over !== null) {
        await stopTree(core, status, 'in the background');
        throw budgetExceeded(status, status.over);
      }
      statuses.set(budget.sandboxId, status);
    }
  });
  // The children against each maxSandboxes: one store transaction, so forks in one tree on two hosts take turns.
  const limited = [...statuses.values()].filter((s) => s.budget.maxSandboxes !== null);
  const { refused } = await core.store.reserveTreeRoom({
    budgetSandboxIds: limited.map((s) => s.budget.sandboxId), childIds, deadStates: DEAD_STATES, holder: core.locks.hostId, leaseMs: TREE_RESERVATION_LEASE_MS,
    admits: (id, alive) => alive + childIds.length <= (statuses.get(id)?.budget.maxSandboxes ?? Infinity),
  });
  if (refused) throw budgetExceeded({ ...(statuses.get(refused.budgetSandboxId) as BudgetStatus), alive: refused.alive }, 'maxSandboxes', childIds.length);
  const renew = setInterval(() => {
    core.store.renewTreeRoom(childIds, TREE_RESERVATION_LEASE_MS).catch((err: unknown) => core.logger.warn('budget: renewing a fork reservation failed', { sandboxId, error: messageOf(err) }));
  }, TREE_RESERVATION_LEASE_MS / 3);
  renew.unref();
  try {
    return await fn();
  } finally {
    clearInterval(renew);
    await core.store.releaseTreeRoom(childIds).catch((err: unknown) => core.logger.warn('budget: releasing a fork reservation failed; it expires by itself', { sandboxId, error: messageOf(err) }));
  }
}

/**
 * Right after a fork of `sandboxId` (its lock released): read its tree's running sandboxes, the new
 * children included, and enforce the budgets covering it now, not at the next sample. A tree over its
 * budget is marked exceeded (awaited: a budget read after this resolves says so) and its sandboxes are
 * paused in the background. Never rejects.
 */
export async function checkBudgetsNow(core: Core, sandboxId: string): Promise<void> {
  try {
    const budgets = await core.store.budgetsCovering([sandboxId]);
    if (budgets.length === 0) return;
    await readTrees(core, budgets);
    for (const budget of budgets) {
      const status = await budgetStatus(core, budget);
      if (status.over !== null) await stopTree(core, status, 'in the background');
    }
  } catch (err) {
    core.logger.error('budget check after a fork failed', { sandboxId, error: messageOf(err) });
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
 */
export async function enforceBudgets(core: Core, sampled: readonly SandboxRecord[]): Promise<void> {
  if (sampled.length === 0) return;
  try {
    for (const budget of await core.store.budgetsCovering(sampled.map((s) => s.id))) {
      const status = await budgetStatus(core, budget);
      if (status.over !== null) await stopTree(core, status, 'awaited');
    }
  } catch (err) {
    core.logger.error('budget enforcement failed', { error: messageOf(err) });
  }
}

/**
 * A tree found over its budget: mark the budget exceeded (once per crossing: persisted, then one event),
 * then pause its running sandboxes whose retry time has come, awaited or in the background.
 */
async function stopTree(core: Core, status: BudgetStatus, pauses: 'awaited' | 'in the background'): Promise<void> {
  await markExceeded(core, status.budget.sandboxId);
  const retryAt = retryAtOf(core);
  const now = core.clock.now();
  const due = status.members.filter((m) => m.state === 'running' && (retryAt.get(m.id) ?? 0) <= now);
  const paused = Promise.all(due.map((m) => pauseForBudget(core, m.id, retryAt)));
  if (pauses === 'awaited') await paused;
}

/**
 * Mark the budget exceeded and emit its event, unless it is marked already or no longer over (re-read under
 * the budget's lock, which a raise also takes: a check racing a raise or another check neither marks a
 * raised budget nor emits twice).
 */
async function markExceeded(core: Core, budgetSandboxId: string): Promise<void> {
  await core.locks.run(`budget:${budgetSandboxId}`, async () => {
    const budget = await core.store.getBudget(budgetSandboxId);
    if (!budget || budget.exceeded !== null) return;
    const status = await budgetStatus(core, budget);
    if (status.over === null) return;
    const now = core.clock.now();
    await core.store.putBudget({ ...budget, exceeded: status.over, updatedAt: now });
    const [max, used] = status.over === 'cpuSeconds' ? [budget.cpuSeconds ?? 0, status.cpuSeconds] : [budget.sandboxSeconds ?? 0, status.sandboxSeconds];
    core.events.emitBudget({ rootId: budget.sandboxId, teamId: budget.teamId, limit: status.over, max, used, at: now });
    core.logger.warn('fork tree over its budget: pausing it', { rootId: budget.sandboxId, limit: status.over, max, used });
  });
}

/**
 * Pause the sandbox if, under its lock, it is still running (its events say cause `budget`); a failure is
 * retried after `timeoutRetryMs`. Never rejects.
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
