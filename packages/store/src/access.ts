/**
 * API key (each a team's, migration 17), audit log (numbered per team, migration 35) and slot lease rows.
 */
import { RamifyError, notFound } from '@ramify/contracts';
import type { AdoptedRows, ApiKeyRecord, AuditQuery, AuditRecord, SlotLease } from '@ramify/core';
import { sql, type Selectable } from 'kysely';
import { conflictOnConstraint, onMissingParent } from './errors.js';
import { inTransaction, type ApiKeysTable, type AuditLogTable, type DialectName, type Executor } from './schema.js';

/** `team_id`, `role`, `expires_at`: migration 17. */
type ApiKeyRow = Selectable<ApiKeysTable>;

const keyFromRow = (r: ApiKeyRow): ApiKeyRecord => ({
  id: r.id,
  teamId: r.team_id,
  role: r.role as ApiKeyRecord['role'],
  name: r.name,
  hash: r.hash,
  prefix: r.prefix,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
});

/** @throws RamifyError `TEAM_NOT_FOUND`, `CONFLICT` (id or hash taken). */
export async function insertApiKey(db: Executor, k: ApiKeyRecord): Promise<void> {
  try {
    await db
      .insertInto('api_keys')
      .values({
        id: k.id, team_id: k.teamId, role: k.role, name: k.name, hash: k.hash, prefix: k.prefix, created_at: k.createdAt, last_used_at: k.lastUsedAt,
        expires_at: k.expiresAt, revoked_at: k.revokedAt,
      })
      .execute();
  } catch (err) {
    onMissingParent(err, () => notFound('TEAM_NOT_FOUND', 'team', k.teamId, { id: k.teamId }));
    conflictOnConstraint(err, `API key '${k.id}' already exists`);
  }
}

export async function apiKeyByHash(db: Executor, hash: string): Promise<ApiKeyRecord | null> {
  const row = await db.selectFrom('api_keys').selectAll().where('hash', '=', hash).where('revoked_at', 'is', null).executeTakeFirst();
  return row ? keyFromRow(row) : null;
}

export async function getApiKey(db: Executor, id: string): Promise<ApiKeyRecord | null> {
  const row = await db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? keyFromRow(row) : null;
}

/** Oldest first; only the team's when `teamId` is given. */
export async function listApiKeys(db: Executor, filter: { teamId?: string } = {}): Promise<ApiKeyRecord[]> {
  let q = db.selectFrom('api_keys').selectAll();
  if (filter.teamId !== undefined) q = q.where('team_id', '=', filter.teamId);
  return (await q.orderBy('created_at').orderBy('id').execute()).map(keyFromRow);
}

export async function touchApiKey(db: Executor, id: string, at: number): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute();
}

/** The first revocation time is kept. */
export async function revokeApiKey(db: Executor, id: string, at: number): Promise<void> {
  await db.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null).execute();
}

/** The `audit_sequences` key of the stream of entries without a team (no team id is empty). */
const ANONYMOUS_STREAM = '';

/**
 * Append one entry (migration 35, docs/design/TEAMS.md "Audit ids"): in one transaction, take its stream's
 * next number from `audit_sequences` (an upsert `last_seq + 1 ... RETURNING`; on Postgres it holds the
 * counter row's lock until commit, so concurrent appends of one team, from any process, get distinct
 * numbers and commit in number order) and insert the row; returns the global `seq` and that `teamSeq`.
 */
export async function appendAudit(db: Executor, e: Omit<AuditRecord, 'seq' | 'teamSeq'>): Promise<Pick<AuditRecord, 'seq' | 'teamSeq'>> {
  return inTransaction(db, async (trx) => {
    const counter = await trx
      .insertInto('audit_sequences')
      .values({ team_id: e.teamId ?? ANONYMOUS_STREAM, last_seq: 1 })
      .onConflict((oc) => oc.column('team_id').doUpdateSet({ last_seq: sql<number>`audit_sequences.last_seq + 1` }))
      .returning('last_seq')
      .executeTakeFirstOrThrow();
    const teamSeq = Number(counter.last_seq);
    const row = await trx
      .insertInto('audit_log')
      .values({
        at: e.at, api_key_id: e.apiKeyId, team_id: e.teamId, team_seq: teamSeq, method: e.method, path: e.path, action: e.action, sandbox_id: e.sandboxId, status: e.status,
        error_code: e.errorCode, tool: e.tool,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return { seq: Number(row.id), teamSeq };
  });
}

const auditFromRow = (r: Selectable<AuditLogTable>): AuditRecord => ({
  seq: Number(r.id), teamSeq: Number(r.team_seq), at: r.at, apiKeyId: r.api_key_id, teamId: r.team_id, method: r.method, path: r.path, action: r.action,
  sandboxId: r.sandbox_id, status: r.status, errorCode: r.error_code, tool: r.tool,
});

/** Newest first: one stream by its numbers when `query.teamId` is given (a team, or null), else every entry by `seq`. */
export async function listAudit(db: Executor, query: AuditQuery): Promise<AuditRecord[]> {
  let q = db.selectFrom('audit_log').selectAll();
  if (query.sandboxId !== undefined) q = q.where('sandbox_id', '=', query.sandboxId);
  const limit = Math.min(Math.max(query.limit ?? 100, 1), 1000);
  if (query.teamId === undefined) return (await q.orderBy('id', 'desc').limit(limit).execute()).map(auditFromRow);
  q = query.teamId === null ? q.where('team_id', 'is', null) : q.where('team_id', '=', query.teamId);
  if (query.beforeTeamSeq !== undefined) q = q.where('team_seq', '<', query.beforeTeamSeq);
  return (await q.orderBy('team_seq', 'desc').limit(limit).execute()).map(auditFromRow);
}

/**
 * Host `hostId`'s lowest free slot ≥ 1 (or the one the sandbox already holds there; one held on another
 * host is given up), in one transaction. Slots are numbered per host (each host has its own address plan).
 * On Postgres the transaction first locks the slots table against other writers (readers go on), so
 * processes allocating at once take turns instead of picking the same free slot; SQLite has one writer.
 * @throws RamifyError `RUNTIME_UNAVAILABLE` when every slot up to `maxSlots` is taken on that host.
 */
export async function allocateSlot(db: Executor, dialect: DialectName, sandboxId: string, hostId: string, maxSlots: number): Promise<number> {
  return inTransaction(db, async (trx) => {
    if (dialect === 'postgres') await sql`LOCK TABLE slots IN EXCLUSIVE MODE`.execute(trx);
    const held = await trx.selectFrom('slots').select(['slot', 'host_id']).where('sandbox_id', '=', sandboxId).executeTakeFirst();
    if (held?.host_id === hostId) return Number(held.slot);
    if (held) await trx.deleteFrom('slots').where('sandbox_id', '=', sandboxId).execute();
    const free = await sql<{ slot: number }>`SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM slots WHERE host_id = ${hostId} AND slot = 1) THEN 1
        ELSE (SELECT MIN(a.slot) + 1 FROM slots a WHERE a.host_id = ${hostId}
                AND NOT EXISTS (SELECT 1 FROM slots b WHERE b.host_id = ${hostId} AND b.slot = a.slot + 1)) END AS slot`.execute(trx);
    const slot = Number(free.rows[0]?.slot);
    if (slot > maxSlots) throw new RamifyError('RUNTIME_UNAVAILABLE', `no free network slot: all ${maxSlots} are in use`, { maxSlots });
    await trx.insertInto('slots').values({ host_id: hostId, slot, sandbox_id: sandboxId }).execute();
    return slot;
  });
}

export async function releaseSlot(db: Executor, sandboxId: string): Promise<void> {
  await db.deleteFrom('slots').where('sandbox_id', '=', sandboxId).execute();
}

/** Host `hostId`'s leases, by slot. */
export async function listSlots(db: Executor, hostId: string): Promise<SlotLease[]> {
  return (await db.selectFrom('slots').select(['host_id', 'slot', 'sandbox_id']).where('host_id', '=', hostId).orderBy('slot').execute()).map((r) => ({
    hostId: r.host_id,
    slot: Number(r.slot),
    sandboxId: r.sandbox_id,
  }));
}

/**
 * Give `hostId` every sandbox, snapshot and slot row that names no host (rows from before migration 26),
 * in one transaction; returns how many of each.
 */
export async function adoptUnhostedRows(db: Executor, hostId: string): Promise<AdoptedRows> {
  return inTransaction(db, async (trx) => ({
    sandboxes: Number((await trx.updateTable('sandboxes').set({ host_id: hostId }).where('host_id', 'is', null).executeTakeFirst()).numUpdatedRows),
    snapshots: Number((await trx.updateTable('snapshots').set({ host_id: hostId }).where('host_id', 'is', null).executeTakeFirst()).numUpdatedRows),
    slots: Number((await trx.updateTable('slots').set({ host_id: hostId }).where('host_id', '=', '').executeTakeFirst()).numUpdatedRows),
  }));
}
