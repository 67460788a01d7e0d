/**
 * Use-cases: a sandbox's private networks, live (running and paused sandboxes, no restart): list, attach
 * (lock → check → persist → enforce → acknowledge) and detach (persist → enforce: open connections to the
 * network's members are cut). If enforcing fails, the stored membership is put back as it was and the
 * error surfaces: what the store says is what the host enforces.
 */
import { MAX_NETWORKS_PER_SANDBOX, RamifyError, internalHostname, invalidField, quote, type NetworkJoinRequest, type SandboxNetworkInfo } from '@ramify/contracts';
import type { Core } from '../context.js';
import { asRamifyError, loadSandbox } from '../lifecycle/records.js';
import { assertNotKilled, egressEnforced } from '../lifecycle/state-machine.js';
import type { NetworkMembership } from '../ports/store.js';
import { assertNetworksEnforceable, enforceStoredNetworks } from './enforcement.js';
import { checkLabel, defaultAlias } from './names.js';
import { findNetwork } from './networks.js';

/** The networks `sandboxId` is on, in the order it joined them. @throws RamifyError `SANDBOX_NOT_FOUND` (also when killed). */
export async function listSandboxNetworks(core: Core, sandboxId: string): Promise<NetworkMembership[]> {
  const record = await loadSandbox(core, sandboxId);
  assertNotKilled(sandboxId, record.state);
  return core.store.networksOfSandbox(sandboxId);
}

/**
 * Put the sandbox on a network: from when this resolves it and the network's members reach each other and
 * resolve each other's names. Attaching to a network it is on already with the same alias (or none) is a no-op.
 * @throws RamifyError `VALIDATION_FAILED` (bad alias, too many networks), `SANDBOX_NOT_FOUND` (also when
 *   killed), `INVALID_STATE` (not running or paused), `NETWORK_NOT_FOUND`, `NETWORK_ALIAS_TAKEN`, `CONFLICT`
 *   (on it already under another alias), `RUNTIME_UNAVAILABLE` (no enforcement), and the enforcer's error
 *   (nothing changes then).
 */
export async function attachNetwork(core: Core, sandboxId: string, request: NetworkJoinRequest): Promise<NetworkMembership> {
  assertNetworksEnforceable(core);
  const asked = request.alias === undefined ? undefined : checkLabel(request.alias, 'alias');
  return core.locks.run(sandboxId, async () => {
    const record = await loadSandbox(core, sandboxId);
    assertMembershipSettable(sandboxId, record.state);
    const network = await findNetwork(core, record.teamId, request.network);
    const current = await core.store.networksOfSandbox(sandboxId);
    const existing = current.find((m) => m.networkId === network.id);
    if (existing) {
      if (asked === undefined || asked === existing.alias) return existing;
      throw new RamifyError('CONFLICT', `sandbox '${sandboxId}' is on network '${network.name}' already, as '${existing.alias}'; detach it first to change its alias`, {
        network: network.name, alias: existing.alias,
      });
    }
    if (current.length >= MAX_NETWORKS_PER_SANDBOX) {
      throw invalidField('body.network', `cannot be joined: sandbox ${quote(sandboxId)} is on ${current.length} networks, the most (${MAX_NETWORKS_PER_SANDBOX}) a sandbox may be on; detach one first`, { field: 'network' });
    }
    const member = { networkId: network.id, sandboxId, alias: asked ?? defaultAlias(sandboxId), attachedAt: core.clock.now() };
    await core.store.addNetworkMember(member);
    try {
      await enforceStoredNetworks(core, record);
    } catch (err) {
      await core.store.removeNetworkMember(network.id, sandboxId);
      throw asRamifyError(err, 'RUNTIME_ERROR', `enforcing network '${network.name}' for sandbox '${sandboxId}' failed (it is not on it)`);
    }
    return { ...member, network: network.name };
  });
}

/**
 * Take the sandbox off a network (idempotent: a sandbox not on it is left alone). From when this resolves,
 * packets between it and members it shares no other network with are dropped, open connections included,
 * and its name there no longer resolves. Allowed in every state but killed (so an `error` sandbox can free
 * a network for deletion).
 * @throws RamifyError `SANDBOX_NOT_FOUND` (also when killed), `NETWORK_NOT_FOUND`, and the enforcer's
 *   error (the sandbox stays on the network then).
 */
export async function detachNetwork(core: Core, sandboxId: string, nameOrId: string): Promise<void> {
  await core.locks.run(sandboxId, async () => {
    const record = await loadSandbox(core, sandboxId);
    assertNotKilled(sandboxId, record.state);
    const network = await findNetwork(core, record.teamId, nameOrId);
    const member = (await core.store.networksOfSandbox(sandboxId)).find((m) => m.networkId === network.id);
    if (!member) return;
    await core.store.removeNetworkMember(network.id, sandboxId);
    if (!egressEnforced(record.state)) return;
    try {
      await enforceStoredNetworks(core, record);
    } catch (err) {
      await core.store.addNetworkMember(member);
      throw asRamifyError(err, 'RUNTIME_ERROR', `detaching sandbox '${sandboxId}' from network '${network.name}' failed (it stays on it)`);
    }
  });
}

/** @throws RamifyError `SANDBOX_NOT_FOUND` when killed, `INVALID_STATE` unless running or paused. */
function assertMembershipSettable(sandboxId: string, state: Parameters<typeof egressEnforced>[0]): void {
  if (egressEnforced(state)) return;
  assertNotKilled(sandboxId, state);
  throw new RamifyError('INVALID_STATE', `sandbox '${sandboxId}' is ${state}; it can join a network while running or paused`, { id: sandboxId, state });
}

/** The API shape of one of a sandbox's networks. */
export function toSandboxNetworkInfo(m: NetworkMembership): SandboxNetworkInfo {
  return { networkId: m.networkId, network: m.network, alias: m.alias, hostname: internalHostname(m.alias, m.network), attachedAt: new Date(m.attachedAt).toISOString() };
}
