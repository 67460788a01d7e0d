/**
 * The calls core makes to the optional {@link PrivateNetworkEnforcer} port, beside the egress enforcer's
 * (`egress/enforcement.ts`). Without an enforcer (a daemon with egress enforcement off) networks can be
 * created and listed, but joining one is refused: nothing would keep members apart from other sandboxes
 * or answer their names.
 */
import { RamifyError, type SnapshotNetworks } from '@ramify/contracts';
import type { Core } from '../context.js';
import type { SandboxRecord } from '../ports/store.js';

/**
 * Make the networks stored for the sandbox the ones in force on its slot (no-op without an enforcer or a
 * slot); used at every restore, after every live attach and detach, and on daemon start.
 * Rejects with the enforcer's error (what was in force stays).
 */
export async function enforceStoredNetworks(core: Core, record: Pick<SandboxRecord, 'id' | 'slot'>): Promise<void> {
  if (!core.networkEnforcer || record.slot === null) return;
  const memberships = await core.store.networksOfSandbox(record.id);
  await core.networkEnforcer.apply(record.id, record.slot, memberships.map((m) => ({ networkId: m.networkId, network: m.network, alias: m.alias })));
}

/** Drop whatever the enforcer holds for `slot` (no-op without an enforcer). */
export async function releaseNetworkEnforcement(core: Core, slot: number): Promise<void> {
  await core.networkEnforcer?.remove(slot);
}

/** The networks a snapshot of the sandbox records (name and alias, in the order it joined them). */
export async function recordedNetworks(core: Pick<Core, 'store'>, sandboxId: string): Promise<SnapshotNetworks> {
  return (await core.store.networksOfSandbox(sandboxId)).map((m) => ({ network: m.network, alias: m.alias }));
}

/**
 * @throws RamifyError `RUNTIME_UNAVAILABLE` when this daemon cannot enforce private networks (egress
 *   enforcement is off: `ramify serve --egress off`).
 */
export function assertNetworksEnforceable(core: Pick<Core, 'networkEnforcer'>): void {
  if (core.networkEnforcer) return;
  throw new RamifyError('RUNTIME_UNAVAILABLE', 'private networks need egress enforcement (nftables and the policy resolver), and this daemon was started with egress enforcement off');
}
