/**
 * Use-cases of private networks as a resource: create, get, list, delete; and their API shape. A network
 * is a name; which sandboxes are on it is its membership (see `membership.ts`).
 */
import { RamifyError, internalHostname, notFound, type NetworkInfo, type NetworkMemberInfo } from '@ramify/contracts';
import type { Core } from '../context.js';
import { newNetworkId } from '../ids.js';
import type { NetworkMembership, NetworkRecord } from '../ports/store.js';
import { checkLabel } from './names.js';

/** A network with its members. */
export interface NetworkWithMembers extends NetworkRecord {
  members: NetworkMembership[];
}

/**
 * Create the network `name` of team `teamId` (stored before it resolves). Names are unique per team.
 * @throws RamifyError `VALIDATION_FAILED` (not a DNS label; details `field: 'name'`), `NETWORK_EXISTS`.
 */
export async function createNetwork(core: Core, teamId: string, input: { name: string }): Promise<NetworkWithMembers> {
  const name = checkLabel(input.name, 'name');
  const record: NetworkRecord = { id: newNetworkId(), teamId, name, createdAt: core.clock.now() };
  await core.store.insertNetwork(record);
  return { ...record, members: [] };
}

/**
 * Team `teamId`'s network called (or with the id) `nameOrId`; another team's is not found (no existence leak).
 * @throws RamifyError `NETWORK_NOT_FOUND` (details `network`).
 */
export async function findNetwork(core: Pick<Core, 'store'>, teamId: string, nameOrId: string): Promise<NetworkRecord> {
  const byId = async (): Promise<NetworkRecord | null> => {
    const network = await core.store.getNetwork(nameOrId);
    return network?.teamId === teamId ? network : null;
  };
  const found = (await core.store.findNetworkByName(teamId, nameOrId)) ?? (await byId());
  if (!found) throw notFound('NETWORK_NOT_FOUND', 'network', nameOrId, { network: nameOrId });
  return found;
}

/** Team `teamId`'s network `nameOrId` and its members. @throws RamifyError `NETWORK_NOT_FOUND`. */
export async function getNetwork(core: Core, teamId: string, nameOrId: string): Promise<NetworkWithMembers> {
  const network = await findNetwork(core, teamId, nameOrId);
  return { ...network, members: await core.store.membersOfNetwork(network.id) };
}

/** Every network of team `teamId`, oldest first, with its members. */
export async function listNetworks(core: Core, teamId: string): Promise<NetworkWithMembers[]> {
  const networks = await core.store.listNetworks(teamId);
  return Promise.all(networks.map(async (n) => ({ ...n, members: await core.store.membersOfNetwork(n.id) })));
}

/**
 * Delete the network `nameOrId`; refused while a sandbox is on it (nothing changes then).
 * @throws RamifyError `NETWORK_NOT_FOUND`, `NETWORK_IN_USE` (details `sandboxes`: the ids of its members).
 */
export async function deleteNetwork(core: Core, teamId: string, nameOrId: string): Promise<void> {
  const network = await findNetwork(core, teamId, nameOrId);
  await core.store.deleteNetwork(network.id);
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** The API shape of one member. */
export function toNetworkMemberInfo(m: NetworkMembership): NetworkMemberInfo {
  return { sandboxId: m.sandboxId, alias: m.alias, hostname: internalHostname(m.alias, m.network), attachedAt: iso(m.attachedAt) };
}

/** The API shape of a network. */
export function toNetworkInfo(n: NetworkWithMembers): NetworkInfo {
  return { id: n.id, name: n.name, createdAt: iso(n.createdAt), members: n.members.map(toNetworkMemberInfo) };
}
