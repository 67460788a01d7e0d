/**
 * Egress policy rows: one per sandbox, its mode and its rules as a JSON array (order kept), replaced in
 * one statement.
 */
import { RamifyError } from '@ramify/contracts';
import type { CanonicalEgressPolicy, EgressPolicyRecord } from '@ramify/core';
import type { Db } from './db.js';

interface EgressPolicyRow {
  sandbox_id: string;
  /** `open`, `allowlist` or `deny-all` (migration 9; older rows were given the mode their rules meant). */
  mode: string;
  rules: string;
  updated_at: number;
}

const fromRow = (r: EgressPolicyRow): EgressPolicyRecord => ({
  sandboxId: r.sandbox_id,
  mode: r.mode as EgressPolicyRecord['mode'],
  rules: JSON.parse(r.rules) as string[],
  updatedAt: r.updated_at,
});

export class EgressPolicyRows {
  readonly #get;
  readonly #put;
  readonly #delete;

  constructor(db: Db) {
    this.#get = db.prepare('SELECT * FROM egress_policies WHERE sandbox_id = ?');
    this.#put = db.prepare(
      `INSERT INTO egress_policies (sandbox_id, mode, rules, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (sandbox_id) DO UPDATE SET mode = excluded.mode, rules = excluded.rules, updated_at = excluded.updated_at`,
    );
    this.#delete = db.prepare('DELETE FROM egress_policies WHERE sandbox_id = ?');
  }

  get(sandboxId: string): EgressPolicyRecord | null {
    const row = this.#get.get(sandboxId) as EgressPolicyRow | undefined;
    return row ? fromRow(row) : null;
  }

  /**
   * Insert or replace the whole policy (one statement: atomic).
   * @throws RamifyError `SANDBOX_NOT_FOUND`; the database's CHECK error when the mode does not fit the rules.
   */
  put(sandboxId: string, policy: CanonicalEgressPolicy, at: number): EgressPolicyRecord {
    const { mode, rules } = policy;
    try {
      this.#put.run(sandboxId, mode, JSON.stringify(rules), at);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY') throw new RamifyError('SANDBOX_NOT_FOUND', `sandbox '${sandboxId}' not found`, { id: sandboxId });
      throw err;
    }
    return { sandboxId, mode, rules: [...rules], updatedAt: at };
  }

  delete(sandboxId: string): void {
    this.#delete.run(sandboxId);
  }
}
