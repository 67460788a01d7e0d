/**
 * Use-case: reconcile on daemon start. Brings the store, the runtimes, the network and snapshot storage
 * back into agreement after a restart or crash:
 * 1. interrupted forks are undone for their children (the caller never learned their ids) and the
 *    parent is brought back to the state it had;
 * 2. the egress policy and private networks of every running or paused sandbox are enforced again (a host reboot or a restart of
 *    the enforcement loses it; re-applying is idempotent), before its agent is reached: the host reaches a
 *    gVisor agent through the slot, whose replies the host drops while it holds no policy for it;
 * 3. every other live sandbox is reconciled by state (see reconcile-sandbox.ts): running ones re-attached,
 *    half-done operations rolled forward or back, paused ones left resumable; those that became running
 *    or paused in doing so get their policy then;
 * 4. orphans are removed: runtime instances no live sandbox owns, network slots no live sandbox leases,
 *    slot leases of dead sandboxes, and `pending` snapshot rows (images never committed). The sandbox
 *    and slot of a template build the stop interrupted (`tplb_…`, ids.ts) go the same way, reported
 *    apart in one info line, not as unknown orphans: nothing is wrong, the build is simply gone.
 * Snapshot directories with no row are only logged (they may belong to a template being built).
 */
import type { Core } from '../context.js';
import { isTemplateBuildSandbox } from '../ids.js';
import { enforceStoredEgressPolicy } from '../egress/enforcement.js';
import { enforceStoredNetworks } from '../networks/enforcement.js';
import type { Runtime } from '../ports/runtime.js';
import type { SandboxRecord } from '../ports/store.js';
import { finishKill } from './kill.js';
import { loadSandbox, messageOf, transition } from './records.js';
import { reconcileSandbox, type ReconcileOutcome } from './reconcile-sandbox.js';
import { restorePaused } from './restore-paused.js';
import { collectSnapshots } from './snapshot-gc.js';
import { alreadyIn, defaultListedStates, egressEnforced, expectsRuntimeInstance, isTerminal } from './state-machine.js';

export interface ReconcileReport {
  /** Sandbox id → what was done. */
  sandboxes: Record<string, ReconcileOutcome>;
  /** Runtime instances stopped because no live sandbox owns them. */
  orphanInstances: string[];
  /** Network slots detached because no live sandbox leases them. */
  orphanSlots: number[];
  /** Pending snapshot rows (and their partial images) removed. */
  orphanSnapshots: string[];
  /** Sandboxes of template builds a stop interrupted (`tplb_…`), stopped with their slots; not orphans. */
  leftoverTemplateBuilds: string[];
}

/** Run reconcile once; never throws (each failure is logged and reported as `failed`). */
export async function reconcile(core: Core): Promise<ReconcileReport> {
  const report: ReconcileReport = { sandboxes: {}, orphanInstances: [], orphanSlots: [], orphanSnapshots: [], leftoverTemplateBuilds: [] };
  const records = await liveRecords(core);
  const runtimeOf = (r: SandboxRecord): Runtime | undefined => core.runtimes.find((rt) => rt.name === r.runtime);

  for (const record of records.filter((r) => r.operation?.kind === 'fork')) {
    await core.locks.run(record.id, () => undoForkChildren(core, record, report));
  }
  const enforced = await reapplyEgressPolicies(core, new Set());
  for (const stale of await liveRecords(core)) {
    if (report.sandboxes[stale.id]) continue;
    report.sandboxes[stale.id] = await core.locks.run(stale.id, async () => {
      const record = await loadSandbox(core, stale.id);
      const outcome = await reconcileSandbox(core, record, runtimeOf(record));
      await finishParentOperation(core, record.id);
      return outcome;
    });
  }
  await reapplyEgressPolicies(core, enforced);
  await removeOrphans(core, report);
  const { leftoverTemplateBuilds, ...rest } = report;
  if (leftoverTemplateBuilds.length > 0) {
    core.logger.info('reconcile: removed what an interrupted template build left (its build sandbox and slot); build the template again', { sandboxIds: leftoverTemplateBuilds });
  }
  core.logger.info('reconcile done', { ...rest });
  return report;
}

async function liveRecords(core: Core): Promise<SandboxRecord[]> {
  const all: SandboxRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await core.store.listSandboxes({ states: defaultListedStates(), hostId: core.hostId, limit: 1000, cursor });
    all.push(...page.sandboxes);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return all;
}

/** Kill every child of an interrupted fork (all or nothing: the fork call never returned them). */
async function undoForkChildren(core: Core, parent: SandboxRecord, report: ReconcileReport): Promise<void> {
  if (parent.operation?.kind !== 'fork') return;
  for (const childId of parent.operation.childIds) {
    await core.locks.run(childId, async () => {
      const child = await core.store.getSandbox(childId);
      if (!child || isTerminal(child.state)) return;
      try {
        const killing = await transition(core, child, 'killing', { operation: { kind: 'kill' }, error: 'fork interrupted by a daemon restart' });
        await finishKill(core, killing);
        report.sandboxes[childId] = 'rolled-back';
      } catch (err) {
        core.logger.error('reconcile: killing a child of an interrupted fork failed', { sandboxId: childId, error: messageOf(err) });
        report.sandboxes[childId] = 'failed';
      }
    });
  }
}

/** After its own reconcile, a parent cut short in a fork or snapshot of a running sandbox is restored (best effort). */
async function finishParentOperation(core: Core, sandboxId: string): Promise<void> {
  const record = await loadSandbox(core, sandboxId);
  const op = record.operation;
  if (!op || (op.kind !== 'fork' && op.kind !== 'snapshot')) return;
  await core.store.updateSandbox(sandboxId, { operation: null });
  if (!op.parentWasRunning || record.pausedSnapshotId === null || !alreadyIn(record.state, 'paused')) return;
  try {
    await restorePaused(core, { ...record, operation: null }, { endAt: core.clock.now() + record.timeoutMs, afterwards: 'operation-done' });
  } catch (err) {
    core.logger.warn('reconcile: restoring an interrupted fork/snapshot parent failed; it stays paused', { sandboxId, error: messageOf(err) });
  }
}

/**
 * Enforce the stored egress policy of every running or paused sandbox again, but those in `done`; returns
 * the ids it enforced, `done`'s included. A failure is logged and the sandbox stays cut off: the enforcer
 * drops all traffic of a slot it holds no policy for (fail closed), and the sandbox's next restore or
 * policy change retries.
 */
async function reapplyEgressPolicies(core: Core, done: ReadonlySet<string>): Promise<Set<string>> {
  const enforced = new Set(done);
  if (!core.egressEnforcer) return enforced;
  for (const stale of await liveRecords(core)) {
    if (done.has(stale.id)) continue;
    await core.locks.run(stale.id, async () => {
      const record = await loadSandbox(core, stale.id);
      if (!egressEnforced(record.state)) return;
      enforced.add(record.id);
      await enforceStoredEgressPolicy(core, record).catch((err: unknown) =>
        core.logger.error('reconcile: enforcing the egress policy failed', { sandboxId: record.id, error: messageOf(err) }),
      );
      await enforceStoredNetworks(core, record).catch((err: unknown) =>
        core.logger.error('reconcile: enforcing the private networks failed', { sandboxId: record.id, error: messageOf(err) }),
      );
    });
  }
  return enforced;
}

async function removeOrphans(core: Core, report: ReconcileReport): Promise<void> {
  const live = new Map((await liveRecords(core)).map((r) => [r.id, r]));
  const owners = new Map<string, Runtime>();
  for (const runtime of core.runtimes) {
    for (const id of await runtime.list().catch(() => [] as string[])) owners.set(id, runtime);
  }
  for (const [id, runtime] of owners) {
    const record = live.get(id);
    if (record && expectsRuntimeInstance(record.state)) continue;
    await runtime.kill(id).then(
      () => (isTemplateBuildSandbox(id) ? report.leftoverTemplateBuilds : report.orphanInstances).push(id),
      (err: unknown) => core.logger.warn('reconcile: stopping an orphan instance failed', { sandboxId: id, error: messageOf(err) }),
    );
  }
  // Slots of interrupted template builds are theirs, not orphans.
  const buildSlots = new Set<number>();
  for (const lease of await core.store.listSlots(core.hostId)) {
    if (live.get(lease.sandboxId)) continue;
    if (isTemplateBuildSandbox(lease.sandboxId)) buildSlots.add(lease.slot);
    await core.store.releaseSlot(lease.sandboxId);
  }
  const leased = new Set((await core.store.listSlots(core.hostId)).map((l) => l.slot));
  const network = core.network;
  for (const slot of (await network?.listSlots().catch(() => [] as number[])) ?? []) {
    if (leased.has(slot) || !network) continue;
    await network.detach(slot).then(
      () => {
        if (!buildSlots.has(slot)) report.orphanSlots.push(slot);
      },
      (err: unknown) => core.logger.warn('reconcile: detaching an orphan slot failed', { slot, error: messageOf(err) }),
    );
  }
  // Template images no template lists any more (replaced by rebuilds) and no live sandbox was made from.
  const templateImages = (await core.store.listSnapshots()).filter((s) => s.kind === 'template').map((s) => s.id);
  await collectSnapshots(core, templateImages);
  await collectUnreferencedPauseImages(core);
  const rows = new Set((await core.store.listSnapshots()).map((s) => s.id));
  for (const snapshot of await core.store.listSnapshots()) {
    if (snapshot.status !== 'pending') continue;
    await core.storage.remove(snapshot.id).catch(() => undefined);
    await core.store.deleteSnapshot(snapshot.id);
    report.orphanSnapshots.push(snapshot.id);
  }
  const unknown = (await core.storage.list().catch(() => [] as string[])).filter((id) => !rows.has(id));
  if (unknown.length > 0) core.logger.warn('reconcile: snapshot images without a store row (left in place)', { snapshotIds: unknown });
}

/**
 * Collect this host's pause images that no sandbox needs any more: a resume collects its image after it
 * answered (`restore-paused.ts`), so a crash in between leaves one behind. Images of sandboxes with a call in
 * flight here are left to that call (a pause marks its image ready just before the sandbox names it).
 */
export async function collectUnreferencedPauseImages(core: Core): Promise<void> {
  const images = await core.store.listSnapshots({ kinds: ['pause'] });
  await collectSnapshots(core, images.filter((s) => s.hostId === core.hostId && (s.sandboxId === null || !core.locks.isBusy(s.sandboxId))).map((s) => s.id));
}
