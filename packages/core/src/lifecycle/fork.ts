/**
 * Use-case: fork a running or paused sandbox into `count` new sandboxes that carry its memory, processes
 * and files. A running parent is checkpointed once into a `fork` snapshot (briefly `pausing → paused`)
 * and restored right away (`resuming → running`, same deadline), unless its runtime takes the fork point
 * in place (`Runtime.checkpointKeepRunning`, the microVM): then the parent stays `running` in the same
 * instance, stopped only while its state is copied. A paused parent's pause image is used as is and the
 * parent stays paused. Then the children are restored concurrently, each with a new id, a
 * new slot, fresh identity, its own copy of the parent's egress policy and exposed ports (with its own access token) (later changes to one do not
 * affect the other), and a place on each of the parent's private networks under an alias derived from the
 * parent's (`<alias>-<n>`), unless `networks: false`. All or nothing: if one child fails, the others are killed.
 *
 * The parent carries a `fork` operation (snapshot id and child ids) from before the runtime acts until
 * the children are up, so reconcile can finish or undo a fork cut short by a crash.
 */
import { MAX_FORK_COUNT, RamifyError } from '@ramify/contracts';
import { runtimeFor, type Core } from '../context.js';
import { newSandboxId } from '../ids.js';
import { phaseTimer, runOperation, runPhase } from '../observe/operation.js';
import type { CanonicalEgressPolicy } from '../egress/policy.js';
import { forkNetworkJoins, type NetworkJoin } from '../networks/joins.js';
import type { SandboxRecord } from '../ports/store.js';
import { checkForkCount, withinQuota } from '../teams/quota.js';
import { checkBudgetsNow, withinBudget } from '../usage/budget-guard.js';
import { checkpointRunning, forkPointRunning } from './checkpoint.js';
import { finishKill } from './kill.js';
import { loadSandbox, messageOf, transition } from './records.js';
import { restorePaused } from './restore-paused.js';
import { collectSnapshots } from './snapshot-gc.js';
import { startSandbox } from './start.js';
import { checkpointSourceFor, isTerminal } from './state-machine.js';

export interface ForkInput {
  /** 1..MAX_FORK_COUNT. */
  count: number;
  /**
   * Whether each child joins its parent's private networks, as `<parent alias>-<n>` (the lowest free n), so
   * siblings and the parent find each other by name. Default true; false: the children are on no network.
   */
  networks?: boolean;
}

/**
 * The children belong to the parent's team, and its quota must have room for them; every budget covering
 * the parent must allow them (none exceeded, `maxSandboxes` not passed). Both are checked before the parent
 * is touched, the budgets on the tree's CPU read up to now; and once the children run, the budgets are
 * checked again (a tree the restores took over its budget is marked and paused right away).
 * @returns the children, all `running`, in id order.
 * @throws RamifyError `VALIDATION_FAILED` (count), `QUOTA_EXCEEDED`, `BUDGET_EXCEEDED` (nothing forked), `SANDBOX_NOT_FOUND`, `INVALID_STATE`, `CHECKPOINT_BLOCKED`
 *   (the parent keeps running), and the first child's restore error (no child is left running then).
 */
export async function forkSandbox(core: Core, sandboxId: string, input: ForkInput): Promise<SandboxRecord[]> {
  if (!Number.isInteger(input.count) || input.count < 1 || input.count > MAX_FORK_COUNT) {
    throw new RamifyError('VALIDATION_FAILED', `count must be an integer from 1 to ${MAX_FORK_COUNT}`, { field: 'count' });
  }
  return runOperation(core, { name: 'fork', sandboxId, attributes: { 'ramify.fork_count': input.count } }, async () => {
    // Where a fork spends its time beside the children's bring-ups (their phases are logged per child).
    const { mark, phases } = phaseTimer();
    const phase = (name: string): void => mark(name, { span: false });
    const children = await core.locks.run(sandboxId, async () => {
      phase('lockMs');
      const loaded = await loadSandbox(core, sandboxId);
      await checkForkCount(core, loaded.teamId, input.count);
      const childIds = Array.from({ length: input.count }, () => newSandboxId());
      return withinQuota(core, loaded.teamId, childIds.map((id) => ({ id, memoryMB: loaded.memoryMB })), () =>
        withinBudget(core, sandboxId, childIds, () => forkUnderLock(core, loaded, childIds, input.networks !== false, phase)));
    });
    // The children are running (and were read as they started): judge the tree's budgets now, not at the
    // next sample. Over: marked now, paused in the background (this needs the locks just released).
    await checkBudgetsNow(core, sandboxId);
    phase('budgetsMs');
    core.logger.debug('sandbox forked', { sandboxId, count: input.count, ...phases });
    return children;
  });
}

/** The fork itself, under the parent's lock, its children admitted by the team's quota. */
async function forkUnderLock(core: Core, loaded: SandboxRecord, childIds: string[], joinNetworks: boolean, phase: (name: string) => void): Promise<SandboxRecord[]> {
  const sandboxId = loaded.id;
  phase('admitMs');
  let parent = loaded;
  let parentRestore: Promise<SandboxRecord> | null = null;
  const keepsRunning = runtimeFor(core, parent.runtime).checkpointKeepRunning !== undefined;
  if (checkpointSourceFor(sandboxId, parent.state) === 'checkpoint-first' && keepsRunning) {
    // The runtime takes the fork point in place: the parent never stops being `running`.
    parent = (await runPhase('forkPoint', () => forkPointRunning(core, parent, { operation: (snapshotId) => ({ kind: 'fork', snapshotId, childIds, parentWasRunning: true }) }))).record;
  } else if (checkpointSourceFor(sandboxId, parent.state) === 'checkpoint-first') {
    const endAt = parent.endAt ?? core.clock.now() + parent.timeoutMs;
    const running = parent;
    parent = (
      await runPhase('forkPoint', () => checkpointRunning(core, running, {
        kind: 'fork',
        operation: (snapshotId) => ({ kind: 'fork', snapshotId, childIds, parentWasRunning: true }),
        afterwards: 'operation-continues',
      }))
    ).record;
    // The parent comes back while its children start: the restores overlap.
    const checkpointed = parent;
    parentRestore = runPhase('restoreParent', () => restoreParent(core, checkpointed, endAt));
  } else {
    parent = await core.store.updateSandbox(sandboxId, {
      operation: { kind: 'fork', snapshotId: parent.pausedSnapshotId as string, childIds, parentWasRunning: false },
    });
  }
  phase('forkPointMs');
  const operation = parent.operation;
  if (operation?.kind !== 'fork') throw new RamifyError('INTERNAL', `fork of '${sandboxId}' lost its operation record`);
  try {
    const egress = (await core.store.getEgressPolicy(sandboxId)) ?? undefined;
    const networks = joinNetworks ? await forkNetworkJoins(core, sandboxId, childIds) : new Map<string, NetworkJoin[]>();
    phase('planMs');
    const [children] = await Promise.allSettled([startChildren(core, parent, { snapshotId: operation.snapshotId, childIds, egress, networks }), parentRestore]);
    if (children.status === 'rejected') throw children.reason;
    phase('childrenMs');
    core.events.emitForked({ sandboxId, sandbox: parent, children: children.value, snapshotId: operation.snapshotId, at: core.clock.now() });
    return children.value;
  } finally {
    await core.store.updateSandbox(sandboxId, { operation: null });
    await collectSnapshots(core, [operation.snapshotId]);
    phase('finishMs');
  }
}

/** Restore the parent after its fork checkpoint; if that fails it stays paused (resumable) and the fork goes on. */
async function restoreParent(core: Core, parent: SandboxRecord, endAt: number): Promise<SandboxRecord> {
  try {
    return await restorePaused(core, parent, { endAt, afterwards: 'operation-continues' });
  } catch (err) {
    core.logger.error('fork: restoring the parent failed; it stays paused', { sandboxId: parent.id, error: messageOf(err) });
    return loadSandbox(core, parent.id);
  }
}

interface ChildPlan {
  /** The fork point. */
  snapshotId: string;
  childIds: string[];
  /** The parent's egress policy at fork time (each child stores its own copy); undefined = never set. */
  egress: CanonicalEgressPolicy | undefined;
  /** Per child id: the networks it joins (none when absent). */
  networks: ReadonlyMap<string, readonly NetworkJoin[]>;
}

async function startChildren(core: Core, parent: SandboxRecord, plan: ChildPlan): Promise<SandboxRecord[]> {
  const { snapshotId, childIds, egress, networks } = plan;
  // Each child's start is a phase of the fork of its own (its phases nest under it), side by side.
  const outcomes = await mapLimit(childIds, core.options.forkConcurrency, (id) =>
    core.locks.run(id, () => runPhase('start', () =>
      startSandbox(core, {
        id,
        teamId: parent.teamId,
        runtime: parent.runtime,
        templateId: parent.templateId,
        sourceSnapshotId: snapshotId,
        // The fork point was made on the parent's root filesystem.
        rootfsDir: parent.rootfsDir,
        parentId: parent.id,
        cpuCount: parent.cpuCount,
        memoryMB: parent.memoryMB,
        diskSizeMB: parent.diskSizeMB,
        metadata: { ...parent.metadata },
        // The parent's environment as fixed at its create (its template's envs and its request's): not looked up again.
        envs: { ...parent.envs },
        timeoutMs: parent.timeoutMs,
        onTimeout: parent.onTimeout,
        autoPause: parent.autoPause,
        egress,
        // Its own URLs (its own id, its own token) for the same ports.
        ingress: parent.ingress,
        networks: networks.get(id) ?? [],
      }), { attributes: { 'ramify.sandbox_id': id } }),
    ),
  );
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  const started = outcomes.filter((o): o is PromiseFulfilledResult<SandboxRecord> => o.status === 'fulfilled').map((o) => o.value);
  if (!failed) return started;
  await Promise.all(started.map((child) => core.locks.run(child.id, () => killStarted(core, child))));
  throw failed.reason;
}

async function killStarted(core: Core, child: SandboxRecord): Promise<void> {
  const current = await loadSandbox(core, child.id);
  if (isTerminal(current.state)) return;
  await finishKill(core, await transition(core, current, 'killing', { operation: { kind: 'kill' }, error: 'fork failed: a sibling could not be started' }));
}

/** Run `fn` over `items` with at most `limit` in flight; never rejects (outcomes in item order). */
async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<PromiseSettledResult<R>[]> {
  const outcomes: PromiseSettledResult<R>[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      try {
        outcomes[index] = { status: 'fulfilled', value: await fn(items[index]) };
      } catch (reason) {
        outcomes[index] = { status: 'rejected', reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return outcomes;
}
