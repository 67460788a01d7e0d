/**
 * The networks a new sandbox joins before it first runs: the ones its create asks for (checked before
 * anything starts), or for a fork child its parent's under derived aliases. They are stored with the
 * sandbox (`startSandbox`), then enforced by its bring-up like its egress policy.
 */
import { MAX_NETWORKS_PER_SANDBOX, RamifyError, invalidField, quote, type NetworkJoinRequest } from '@ramify/contracts';
import type { Core } from '../context.js';
import { assertNetworksEnforceable } from './enforcement.js';
import { checkLabel, defaultAlias, forkAliases } from './names.js';
import { findNetwork } from './networks.js';

/** One network a new sandbox joins, resolved. */
export interface NetworkJoin {
  networkId: string;
  network: string;
  alias: string;
}

/**
 * Resolve and check a create's `networks` for the sandbox `sandboxId` (nothing is stored).
 * @throws RamifyError `RUNTIME_UNAVAILABLE` (no enforcement on this daemon), `NETWORK_NOT_FOUND`,
 *   `VALIDATION_FAILED` (a bad alias, a network given twice, too many; details `field`),
 *   `NETWORK_ALIAS_TAKEN`.
 */
export async function planNetworkJoins(core: Core, sandboxId: string, teamId: string, requests: readonly NetworkJoinRequest[] | undefined): Promise<NetworkJoin[]> {
  if (!requests || requests.length === 0) return [];
  assertNetworksEnforceable(core);
  if (requests.length > MAX_NETWORKS_PER_SANDBOX) {
    throw invalidField('body.networks', `must be an array of at most ${MAX_NETWORKS_PER_SANDBOX} networks (the most a sandbox may be on), got ${requests.length}`, { field: 'networks' });
  }
  const joins: NetworkJoin[] = [];
  for (const [i, request] of requests.entries()) {
    const alias = request.alias === undefined ? defaultAlias(sandboxId) : checkLabel(request.alias, `networks[${i}].alias`);
    const network = await findNetwork(core, teamId, request.network);
    if (joins.some((j) => j.networkId === network.id)) {
      throw invalidField(`body.networks.${i}.network`, `must name each network once, got network ${quote(network.name)} again`, { field: `networks[${i}].network`, network: network.name });
    }
    const holder = (await core.store.membersOfNetwork(network.id)).find((m) => m.alias === alias);
    if (holder) {
      throw new RamifyError('NETWORK_ALIAS_TAKEN', `the alias '${alias}' is taken on network '${network.name}' (by ${holder.sandboxId})`, { network: network.name, alias, sandboxId: holder.sandboxId });
    }
    joins.push({ networkId: network.id, network: network.name, alias });
  }
  return joins;
}

/**
 * For each of a fork's children, in order: every network of the parent, under `<parent alias>-<n>` (the
 * lowest n not taken on that network, distinct among the children). Caller holds the parent's lock.
 */
export async function forkNetworkJoins(core: Core, parentId: string, childIds: readonly string[]): Promise<Map<string, NetworkJoin[]>> {
  const out = new Map<string, NetworkJoin[]>(childIds.map((id) => [id, []]));
  for (const m of await core.store.networksOfSandbox(parentId)) {
    const taken = new Set((await core.store.membersOfNetwork(m.networkId)).map((x) => x.alias));
    const aliases = forkAliases(m.alias, childIds.length, taken);
    childIds.forEach((id, i) => out.get(id)!.push({ networkId: m.networkId, network: m.network, alias: aliases[i]! }));
  }
  return out;
}

/**
 * Store `joins` for the new sandbox `sandboxId` (before it is brought up, so its first packet already meets them).
 * @throws RamifyError `NETWORK_ALIAS_TAKEN` or `NETWORK_NOT_FOUND` when a concurrent call got there first.
 */
export async function joinNetworks(core: Core, sandboxId: string, joins: readonly NetworkJoin[], at: number): Promise<void> {
  for (const j of joins) await core.store.addNetworkMember({ networkId: j.networkId, sandboxId, alias: j.alias, attachedAt: at });
}
