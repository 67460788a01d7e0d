/**
 * Private network rows (migration 18): networks of a team, unique by name in it, and their members, one alias per
 * sandbox and network, unique on the network. Each call is one statement or one short transaction.
 */
import { RamifyError, notFound } from '@ramify/contracts';
import type { NetworkMemberRecord, NetworkMembership, NetworkRecord } from '@ramify/core';
import type { Selectable } from 'kysely';
import { constraintKind } from './errors.js';
import { inTransaction, type Executor, type NetworkMembersTable, type NetworksTable } from './schema.js';

type NetworkRow = Selectable<NetworksTable>;
type MemberRow = Selectable<NetworkMembersTable> & { name: string };

const networkFromRow = (r: NetworkRow): NetworkRecord => ({ id: r.id, teamId: r.team_id, name: r.name, createdAt: r.created_at });
const memberFromRow = (r: MemberRow): NetworkMembership => ({ networkId: r.network_id, sandboxId: r.sandbox_id, alias: r.alias, attachedAt: r.attached_at, network: r.name });

/** @throws RamifyError NETWORK_EXISTS when the name is taken. */
export async function insertNetwork(db: Executor, n: NetworkRecord): Promise<void> {
  try {
    await db.insertInto('networks').values({ id: n.id, team_id: n.teamId, name: n.name, created_at: n.createdAt }).execute();
  } catch (err) {
    if (constraintKind(err) === null) throw err;
    const existing = await networkByName(db, n.teamId, n.name);
    throw new RamifyError('NETWORK_EXISTS', `a network named '${n.name}' exists already`, { name: n.name, ...(existing ? { id: existing.id } : {}) });
  }
}

export async function getNetwork(db: Executor, id: string): Promise<NetworkRecord | null> {
  const row = await db.selectFrom('networks').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? networkFromRow(row) : null;
}

export async function networkByName(db: Executor, teamId: string, name: string): Promise<NetworkRecord | null> {
  const row = await db.selectFrom('networks').selectAll().where('team_id', '=', teamId).where('name', '=', name).executeTakeFirst();
  return row ? networkFromRow(row) : null;
}

/** The team's networks, oldest first. */
export async function listNetworks(db: Executor, teamId: string): Promise<NetworkRecord[]> {
  return (await db.selectFrom('networks').selectAll().where('team_id', '=', teamId).orderBy('created_at').orderBy('id').execute()).map(networkFromRow);
}

/** One transaction. @throws RamifyError NETWORK_IN_USE (details `sandboxes`), NETWORK_NOT_FOUND. */
export async function deleteNetwork(db: Executor, id: string): Promise<void> {
  await inTransaction(db, async (trx) => {
    const network = await getNetwork(trx, id);
    if (!network) throw notFound('NETWORK_NOT_FOUND', 'network', id, { network: id });
    const sandboxes = (await membersOfNetwork(trx, id)).map((m) => m.sandboxId);
    if (sandboxes.length > 0) {
      throw new RamifyError('NETWORK_IN_USE', `network '${network.name}' still has sandboxes on it: ${sandboxes.join(', ')} (detach or kill them first)`, {
        network: network.name, sandboxes,
      });
    }
    await trx.deleteFrom('networks').where('id', '=', id).execute();
  });
}

/** One transaction. @throws RamifyError NETWORK_ALIAS_TAKEN, CONFLICT (already a member), NETWORK_NOT_FOUND, SANDBOX_NOT_FOUND. */
export async function addNetworkMember(db: Executor, m: NetworkMemberRecord): Promise<void> {
  await inTransaction(db, async (trx) => {
    const network = await getNetwork(trx, m.networkId);
    if (!network) throw notFound('NETWORK_NOT_FOUND', 'network', m.networkId, { network: m.networkId });
    const taken = await trx.selectFrom('network_members').select('sandbox_id').where('network_id', '=', m.networkId).where('alias', '=', m.alias).executeTakeFirst();
    if (taken && taken.sandbox_id !== m.sandboxId) {
      throw new RamifyError('NETWORK_ALIAS_TAKEN', `the alias '${m.alias}' is taken on network '${network.name}' (by ${taken.sandbox_id})`, {
        network: network.name, alias: m.alias, sandboxId: taken.sandbox_id,
      });
    }
    try {
      await trx.insertInto('network_members').values({ network_id: m.networkId, sandbox_id: m.sandboxId, alias: m.alias, attached_at: m.attachedAt }).execute();
    } catch (err) {
      const kind = constraintKind(err);
      if (kind === 'foreign-key') throw notFound('SANDBOX_NOT_FOUND', 'sandbox', m.sandboxId, { id: m.sandboxId });
      if (kind !== null) throw new RamifyError('CONFLICT', `sandbox '${m.sandboxId}' is on network '${network.name}' already`, { network: network.name, sandboxId: m.sandboxId });
      throw err;
    }
  });
}

/** @returns whether the sandbox was on the network. */
export async function removeNetworkMember(db: Executor, networkId: string, sandboxId: string): Promise<boolean> {
  return (await db.deleteFrom('network_members').where('network_id', '=', networkId).where('sandbox_id', '=', sandboxId).executeTakeFirst()).numDeletedRows > 0n;
}

const members = (db: Executor) => db.selectFrom('network_members as m').innerJoin('networks as n', 'n.id', 'm.network_id').selectAll('m').select('n.name');

/** The networks a sandbox is on, in the order it joined them. */
export async function networksOfSandbox(db: Executor, sandboxId: string): Promise<NetworkMembership[]> {
  return (await members(db).where('m.sandbox_id', '=', sandboxId).orderBy('m.attached_at').orderBy('n.name').execute()).map(memberFromRow);
}

/** A network's members, by alias. */
export async function membersOfNetwork(db: Executor, networkId: string): Promise<NetworkMembership[]> {
  return (await members(db).where('m.network_id', '=', networkId).orderBy('m.alias').execute()).map(memberFromRow);
}

/** Part of a kill's write: the sandbox is on no network any more. */
export async function deleteMembershipsOf(db: Executor, sandboxId: string): Promise<void> {
  await db.deleteFrom('network_members').where('sandbox_id', '=', sandboxId).execute();
}
