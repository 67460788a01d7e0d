/**
 * Private network rows (migration 18): networks of a team, unique by name in it, and their members, one alias per
 * sandbox and network, unique on the network. Each call is one statement or one short transaction.
 */
import { RamifyError } from '@ramify/contracts';
import type { NetworkMemberRecord, NetworkMembership, NetworkRecord } from '@ramify/core';
import type { Db } from './db.js';

interface NetworkRow {
  id: string;
  team_id: string;
  name: string;
  created_at: number;
}

interface MemberRow {
  network_id: string;
  sandbox_id: string;
  alias: string;
  attached_at: number;
  name: string;
}

const networkFromRow = (r: NetworkRow): NetworkRecord => ({ id: r.id, teamId: r.team_id, name: r.name, createdAt: r.created_at });
const memberFromRow = (r: MemberRow): NetworkMembership => ({ networkId: r.network_id, sandboxId: r.sandbox_id, alias: r.alias, attachedAt: r.attached_at, network: r.name });

const sqliteCode = (err: unknown): string => String((err as { code?: unknown }).code ?? '');

const MEMBERS = 'SELECT m.*, n.name FROM network_members m JOIN networks n ON n.id = m.network_id';

export class NetworkRows {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  /** @throws RamifyError NETWORK_EXISTS when the name is taken. */
  insert(n: NetworkRecord): void {
    try {
      this.#db.prepare('INSERT INTO networks (id, team_id, name, created_at) VALUES (?, ?, ?, ?)').run(n.id, n.teamId, n.name, n.createdAt);
    } catch (err) {
      if (!sqliteCode(err).startsWith('SQLITE_CONSTRAINT')) throw err;
      const existing = this.byName(n.teamId, n.name);
      throw new RamifyError('NETWORK_EXISTS', `a network named '${n.name}' exists already`, { name: n.name, ...(existing ? { id: existing.id } : {}) });
    }
  }

  get(id: string): NetworkRecord | null {
    const row = this.#db.prepare('SELECT * FROM networks WHERE id = ?').get(id) as NetworkRow | undefined;
    return row ? networkFromRow(row) : null;
  }

  byName(teamId: string, name: string): NetworkRecord | null {
    const row = this.#db.prepare('SELECT * FROM networks WHERE team_id = ? AND name = ?').get(teamId, name) as NetworkRow | undefined;
    return row ? networkFromRow(row) : null;
  }

  list(teamId: string): NetworkRecord[] {
    return (this.#db.prepare('SELECT * FROM networks WHERE team_id = ? ORDER BY created_at, id').all(teamId) as NetworkRow[]).map(networkFromRow);
  }

  /** @throws RamifyError NETWORK_IN_USE (details `sandboxes`), NETWORK_NOT_FOUND. */
  delete(id: string): void {
    this.#db.transaction(() => {
      const network = this.get(id);
      if (!network) throw new RamifyError('NETWORK_NOT_FOUND', `network '${id}' not found`, { network: id });
      const sandboxes = this.members(id).map((m) => m.sandboxId);
      if (sandboxes.length > 0) {
        throw new RamifyError('NETWORK_IN_USE', `network '${network.name}' still has sandboxes on it: ${sandboxes.join(', ')} (detach or kill them first)`, {
          network: network.name, sandboxes,
        });
      }
      this.#db.prepare('DELETE FROM networks WHERE id = ?').run(id);
    })();
  }

  /** @throws RamifyError NETWORK_ALIAS_TAKEN, CONFLICT (already a member), NETWORK_NOT_FOUND, SANDBOX_NOT_FOUND. */
  addMember(m: NetworkMemberRecord): void {
    this.#db.transaction(() => {
      const network = this.get(m.networkId);
      if (!network) throw new RamifyError('NETWORK_NOT_FOUND', `network '${m.networkId}' not found`, { network: m.networkId });
      const taken = this.#db.prepare('SELECT sandbox_id FROM network_members WHERE network_id = ? AND alias = ?').get(m.networkId, m.alias) as { sandbox_id: string } | undefined;
      if (taken && taken.sandbox_id !== m.sandboxId) {
        throw new RamifyError('NETWORK_ALIAS_TAKEN', `the alias '${m.alias}' is taken on network '${network.name}' (by ${taken.sandbox_id})`, {
          network: network.name, alias: m.alias, sandboxId: taken.sandbox_id,
        });
      }
      try {
        this.#db.prepare('INSERT INTO network_members (network_id, sandbox_id, alias, attached_at) VALUES (?, ?, ?, ?)').run(m.networkId, m.sandboxId, m.alias, m.attachedAt);
      } catch (err) {
        const code = sqliteCode(err);
        if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY') throw new RamifyError('SANDBOX_NOT_FOUND', `sandbox '${m.sandboxId}' not found`, { id: m.sandboxId });
        if (code.startsWith('SQLITE_CONSTRAINT')) throw new RamifyError('CONFLICT', `sandbox '${m.sandboxId}' is on network '${network.name}' already`, { network: network.name, sandboxId: m.sandboxId });
        throw err;
      }
    })();
  }

  removeMember(networkId: string, sandboxId: string): boolean {
    return this.#db.prepare('DELETE FROM network_members WHERE network_id = ? AND sandbox_id = ?').run(networkId, sandboxId).changes > 0;
  }

  ofSandbox(sandboxId: string): NetworkMembership[] {
    return (this.#db.prepare(`${MEMBERS} WHERE m.sandbox_id = ? ORDER BY m.attached_at, n.name`).all(sandboxId) as MemberRow[]).map(memberFromRow);
  }

  members(networkId: string): NetworkMembership[] {
    return (this.#db.prepare(`${MEMBERS} WHERE m.network_id = ? ORDER BY m.alias`).all(networkId) as MemberRow[]).map(memberFromRow);
  }

  /** Part of a kill's write: the sandbox is on no network any more. */
  deleteMembershipsOf(sandboxId: string): void {
    this.#db.prepare('DELETE FROM network_members WHERE sandbox_id = ?').run(sandboxId);
  }
}
