/**
 * Starting a new sandbox from an image, shared by create and by each child of a fork:
 * record `creating` (with a `create` operation and its exposed ports) → store its budget, egress policy and a new access token → lease a slot → attach network
 * → enforce the egress policy → restore → agent →
 * identity → `running` with its timeout clock started. On failure everything it took is released and
 * the sandbox ends in `error` with the reason; when the runtime refused the request as bad input
 * (`VALIDATION_FAILED`) it ends `killed` instead, so a rejected create leaves nothing to clean up.
 */
import { isRamifyError, RamifyError, type Budget } from '@ramify/contracts';
import { newSandboxBudget } from '../usage/budgets.js';
import { prewarmFreeSlots } from './prewarm.js';
import type { Core } from '../context.js';
import type { CanonicalEgressPolicy } from '../egress/policy.js';
import { joinNetworks, type NetworkJoin } from '../networks/joins.js';
import { newAccessToken } from '../ingress/access-token.js';
import { copyIngress, NO_INGRESS } from '../ingress/ports.js';
import type { SandboxIngress, SandboxRecord } from '../ports/store.js';
import { adoptPooled } from '../pool/claim.js';
import type { PooledSandbox } from '../pool/warm-pool.js';
import { phaseTimer } from '../observe/operation.js';
import { bringUp, releaseResources } from './bring-up.js';
import { finishKill } from './kill.js';
import { messageOf, transition } from './records.js';

/** Errors of a step that refused the request as bad input (nothing ran): the sandbox ends `killed`, not `error`. */
const REFUSED_AS_BAD_INPUT: ReadonlySet<string> = new Set(['VALIDATION_FAILED', 'NETWORK_NOT_FOUND', 'NETWORK_ALIAS_TAKEN']);

/** The part of a new sandbox's record its creator chooses; the rest is filled in here. */
export type NewSandbox = Pick<
  SandboxRecord,
  'id' | 'teamId' | 'runtime' | 'templateId' | 'sourceSnapshotId' | 'rootfsDir' | 'parentId' | 'cpuCount' | 'memoryMB' | 'diskSizeMB' | 'metadata' | 'envs' | 'timeoutMs' | 'onTimeout' | 'autoPause'
> & {
  sourceSnapshotId: string;
  /** Normalised egress policy to store for it (a fork child gets a copy of its parent's); absent = none set (open). */
  egress?: CanonicalEgressPolicy;
  /** Exposed ports and autoResume (a fork child's: a copy of its parent's); absent = none. */
  ingress?: SandboxIngress;
  /** Private networks to join before it runs (checked by the caller; a fork child's: its parent's, derived aliases); absent = none. */
  networks?: readonly NetworkJoin[];
  /** A budget for it and its forks (create only), stored before it runs; absent = none. */
  budget?: Budget;
};

/**
 * Insert the sandbox as `creating` and bring it up from `fresh.sourceSnapshotId`, or, given `pooled` (a warm
 * pool sandbox of that image, already restored on its own slot under id `fresh.id`), adopt it instead.
 * Caller holds the new id's lock.
 * @returns the record, now `running`.
 * @throws the bring-up's RamifyError: the record is then in `error`, or `killed` when it was
 *   `VALIDATION_FAILED` (bad input refused by a step; `error` with "kill failed" if releasing failed).
 */
export async function startSandbox(core: Core, fresh: NewSandbox, pooled: PooledSandbox | null = null): Promise<SandboxRecord> {
  const { egress, ingress, networks, budget, ...fields } = fresh;
  let record: SandboxRecord = {
    ...fields,
    ingress: copyIngress(ingress ?? NO_INGRESS),
    state: 'creating',
    createdAt: core.clock.now(),
    endAt: null,
    slot: pooled?.slot ?? null,
    pausedSnapshotId: null,
    error: null,
    operation: { kind: 'create' },
    lastActiveAt: null,
    hostId: core.hostId,
  };
  const { mark: phase, within, phases } = phaseTimer();
  await core.store.insertSandbox(record);
  if (pooled) core.pool.settle(record.id);
  core.events.emitState({ sandboxId: record.id, from: 'creating', to: 'creating', sandbox: record, at: record.createdAt });
  try {
    if (budget !== undefined) await core.store.putBudget(newSandboxBudget(record.id, record.teamId, budget, record.createdAt));
    if (egress !== undefined) await core.store.putEgressPolicy(record.id, egress, record.createdAt);
    if (networks) await joinNetworks(core, record.id, networks, record.createdAt);
    // Its own access token (a fork's differs from its parent's), stored before the sandbox is acknowledged.
    await core.store.ensureAccessToken(record.id, newAccessToken(core.entropy), record.createdAt);
    phase('storeMs');
    const claimed = record;
    // The bring-up's own phases (network, egress, restore, agent, identity) nest under this one.
    record = pooled
      ? await within('claimMs', () => adoptOrRestore(core, claimed, fresh.sourceSnapshotId))
      : await within('bringUpMs', () => restoreFresh(core, claimed, fresh.sourceSnapshotId));
  } catch (err) {
    // The stored row is the truth: a step may have leased (or released) a slot since `record` was read.
    record = (await core.store.getSandbox(record.id)) ?? record;
    if (isRamifyError(err) && REFUSED_AS_BAD_INPUT.has(err.code)) {
      // The runtime refused the request as bad input (e.g. more memory than the image was booted with):
      // nothing ran, so no sandbox is left behind (it ends `killed`, the reason kept in its record).
      const killing = await transition(core, record, 'killing', { operation: { kind: 'kill' }, error: `create refused: ${messageOf(err)}` });
      await finishKill(core, killing); // Ends `error` only if releasing what it took failed.
      throw err;
    }
    const releaseFailure = await releaseResources(core, record);
    await transition(core, record, 'error', {
      operation: null,
      slot: releaseFailure === null ? null : record.slot,
      error: `create failed: ${messageOf(err)}`,
    });
    throw err;
  }
  const running = await transition(core, record, 'running', { operation: null, endAt: core.clock.now() + record.timeoutMs });
  phase('runningMs');
  core.logger.debug('sandbox started', { sandboxId: record.id, pool: pooled ? 'hit' : 'miss', ...phases });
  return running;
}

/** Lease a slot for `record` and restore `snapshotId` into it. @returns the record with its slot. */
async function restoreFresh(core: Core, record: SandboxRecord, snapshotId: string): Promise<SandboxRecord> {
  const slot = await core.store.allocateSlot(record.id, core.hostId);
  const withSlot = await core.store.updateSandbox(record.id, { slot });
  await bringUp(core, withSlot, snapshotId);
  // The slot taken is replaced once the bring-ups are done (a fork's siblings took the prepared ones).
  prewarmFreeSlots(core);
  return withSlot;
}

/**
 * Make the pooled sandbox under `record` this one; when that fails (its agent channel was lost), release it
 * and restore as without a pool, so the create still succeeds.
 */
async function adoptOrRestore(core: Core, record: SandboxRecord, snapshotId: string): Promise<SandboxRecord> {
  // Its counters so far (the pool's restore, its idle time there) are not this sandbox's use: the baseline
  // is read while the claim applies egress and identity (no user process runs before the create answers),
  // not after it: a reading waits for the daemon's file reads queue, up to tens of ms on a busy host.
  const baseline = core.meter.baseline(record);
  try {
    await adoptPooled(core, record);
    await baseline;
    return record;
  } catch (err) {
    await baseline;
    core.logger.warn('claiming a pooled sandbox failed; restoring instead', { sandboxId: record.id, error: messageOf(err) });
    core.pool.failed();
    const failure = await releaseResources(core, record);
    if (failure !== null) throw new RamifyError('RUNTIME_ERROR', `releasing the pooled sandbox '${record.id}' failed: ${failure}`, { id: record.id });
    return restoreFresh(core, await core.store.updateSandbox(record.id, { slot: null }), snapshotId);
  }
}
