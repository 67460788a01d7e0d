/**
 * Egress policy rows: one per sandbox, its mode and its rules as a JSON array (order kept), replaced in
 * one statement.
 */
import { RamifyError, notFound } from '@ramify/contracts';
import type { CanonicalEgressPolicy, EgressPolicyRecord } from '@ramify/core';
import { onMissingParent } from './errors.js';
import type { Selectable } from 'kysely';
import type { EgressPoliciesTable, Executor } from './schema.js';

/** `mode`: `open`, `allowlist` or `deny-all` (migration 9; older rows were given the mode their rules meant). */
type EgressPolicyRow = Selectable<EgressPoliciesTable>;

const fromRow = (r: EgressPolicyRow): EgressPolicyRecord => ({
  sandboxId: r.sandbox_id,
  mode: r.mode as EgressPolicyRecord['mode'],
  rules: JSON.parse(r.rules) as string[],
  updatedAt: r.updated_at,
});

export async function getEgressPolicy(db: Executor, sandboxId: string): Promise<EgressPolicyRecord | null> {
  const row = await db.selectFrom('egress_policies').selectAll().where('sandbox_id', '=', sandboxId).executeTakeFirst();
  return row ? fromRow(row) : null;
}

/**
 * Insert or replace the whole policy (one statement: atomic).
 * @throws RamifyError `SANDBOX_NOT_FOUND`; the database's CHECK error when the mode does not fit the rules.
 */
export async function putEgressPolicy(db: Executor, sandboxId: string, policy: CanonicalEgressPolicy, at: number): Promise<EgressPolicyRecord> {
  const { mode, rules } = policy;
  const row = { sandbox_id: sandboxId, mode, rules: JSON.stringify(rules), updated_at: at };
  try {
    await db
      .insertInto('egress_policies')
      .values(row)
      .onConflict((oc) => oc.column('sandbox_id').doUpdateSet({ mode: row.mode, rules: row.rules, updated_at: row.updated_at }))
      .execute();
  } catch (err) {
    onMissingParent(err, () => notFound('SANDBOX_NOT_FOUND', 'sandbox', sandboxId, { id: sandboxId }));
    throw err;
  }
  return { sandboxId, mode, rules: [...rules], updatedAt: at };
}

export async function deleteEgressPolicy(db: Executor, sandboxId: string): Promise<void> {
  await db.deleteFrom('egress_policies').where('sandbox_id', '=', sandboxId).execute();
}
