/**
 * The calls core makes to the optional {@link EgressEnforcer} port. Without an enforcer (none wired yet,
 * or a host without networking) they do nothing: policies are still validated and stored.
 */
import type { Core } from '../context.js';
import type { SandboxRecord } from '../ports/store.js';
import { OPEN_EGRESS_POLICY, parseEgressPolicy, type EgressPolicy } from './policy.js';

/** Make `policy` the one in force on the sandbox's slot (no-op without an enforcer or a slot). Rejects with the enforcer's error. */
export async function enforceEgressPolicy(core: Core, record: Pick<SandboxRecord, 'id' | 'slot'>, policy: EgressPolicy): Promise<void> {
  if (!core.egressEnforcer || record.slot === null) return;
  await core.egressEnforcer.apply(record.id, record.slot, policy);
}

/**
 * Apply the sandbox's stored policy (open when none was set) to its slot; used at every restore (alongside the runtime's restore: the slot drops everything until it lands) and on
 * daemon start. Rejects with the enforcer's error, or `VALIDATION_FAILED` if a stored rule no longer parses.
 */
export async function enforceStoredEgressPolicy(core: Core, record: Pick<SandboxRecord, 'id' | 'slot'>): Promise<void> {
  if (!core.egressEnforcer || record.slot === null) return;
  const stored = await core.store.getEgressPolicy(record.id);
  await enforceEgressPolicy(core, record, stored ? parseEgressPolicy(stored, 'stored') : OPEN_EGRESS_POLICY);
}

/** Drop whatever the enforcer holds for `slot` (no-op without an enforcer). */
export async function releaseEgressEnforcement(core: Core, slot: number): Promise<void> {
  await core.egressEnforcer?.remove(slot);
}
