/**
 * Event, webhook and delivery rows (migrations 20, 28). Events are appended in order: `seq` (global,
 * increasing) and `team_seq`, the team's own number from its counter in `event_sequences` (bumped in the
 * append's transaction, never lowered, so a cursor never points at a newer event after a prune; on
 * Postgres the counter's row lock also makes a team's appends commit in number order). Read by team,
 * optionally by sandbox and type, from a team cursor in either direction.
 */
import { RamifyError, notFound } from '@ramify/contracts';
import type { DeliveryClaim, DeliveryRecord, EventQuery, EventRecord, WebhookRecord } from '@ramify/core';
import { sql, type Selectable } from 'kysely';
import { conflictOnConstraint, onMissingParent } from './errors.js';
import { EVENTS_CHANNEL } from './event-notify.js';
import { databaseNow } from './hosts.js';
import { dialectOf, insertRows } from './prepared.js';
import { inTransaction, type EventsTable, type Executor, type WebhookDeliveriesTable, type WebhooksTable } from './schema.js';

type EventRow = Selectable<EventsTable>;

const eventFromRow = (r: EventRow): EventRecord => ({
  seq: Number(r.seq),
  teamSeq: Number(r.team_seq),
  type: r.type as EventRecord['type'],
  at: r.at,
  teamId: r.team_id,
  sandboxId: r.sandbox_id,
  keyId: r.key_id,
  cause: r.cause as EventRecord['cause'],
  data: JSON.parse(r.data) as Record<string, unknown>,
});

/** Largest page a read returns (one more than the API's largest page). */
const MAX_READ = 1001;

/** Append one event; returns it with its `seq` and its team's next `teamSeq`, both taken in one transaction. */
export async function appendEvent(db: Executor, e: Omit<EventRecord, 'seq' | 'teamSeq'>): Promise<EventRecord> {
  return inTransaction(db, async (trx) => {
    const counter = await trx
      .insertInto('event_sequences')
      .values({ team_id: e.teamId, last_seq: 1 })
      .onConflict((oc) => oc.column('team_id').doUpdateSet({ last_seq: sql<number>`event_sequences.last_seq + 1` }))
      .returning('last_seq')
      .executeTakeFirstOrThrow();
    const teamSeq = Number(counter.last_seq);
    const row = { type: e.type, at: e.at, team_id: e.teamId, team_seq: teamSeq, sandbox_id: e.sandboxId, key_id: e.keyId, cause: e.cause, data: JSON.stringify(e.data) };
    const { rows } = await insertRows<{ seq: number }>(trx, 'events', [row], 'seq');
    // Delivered to every listening process when this transaction commits (docs/design/SCALE-OUT.md).
    if (dialectOf(trx) === 'postgres') await sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${e.teamId})`.execute(trx);
    return { ...e, seq: Number(rows[0]?.seq), teamSeq };
  });
}

/** One page of a team's events (see {@link EventQuery}). */
export async function listEvents(db: Executor, q: EventQuery): Promise<EventRecord[]> {
  let query = db.selectFrom('events').selectAll().where('team_id', '=', q.teamId);
  if (q.sandboxId !== undefined) query = query.where('sandbox_id', '=', q.sandboxId);
  if (q.types && q.types.length > 0) query = query.where('type', 'in', q.types);
  if (q.afterTeamSeq !== undefined) query = query.where('team_seq', q.order === 'asc' ? '>' : '<', q.afterTeamSeq);
  const limit = Math.min(Math.max(Math.floor(q.limit) || 1, 1), MAX_READ);
  return (await query.orderBy('team_seq', q.order === 'asc' ? 'asc' : 'desc').limit(limit).execute()).map(eventFromRow);
}

/** The event of global number `seq`, or null. */
export async function getEvent(db: Executor, seq: number): Promise<EventRecord | null> {
  const row = await db.selectFrom('events').selectAll().where('seq', '=', seq).executeTakeFirst();
  return row ? eventFromRow(row) : null;
}

/** The team's last event number (0 before its first). */
export async function lastEventTeamSeq(db: Executor, teamId: string): Promise<number> {
  const row = await db.selectFrom('event_sequences').select('last_seq').where('team_id', '=', teamId).executeTakeFirst();
  return Number(row?.last_seq ?? 0);
}

/** Every team's last event number given out (its counter), by team. */
export async function eventPositions(db: Executor): Promise<Array<{ teamId: string; lastTeamSeq: number }>> {
  return (await db.selectFrom('event_sequences').select(['team_id', 'last_seq']).orderBy('team_id').execute()).map((r) => ({ teamId: r.team_id, lastTeamSeq: Number(r.last_seq) }));
}

/** Delete events before `before` and the deliveries of them, in one transaction; returns the events deleted. */
export async function pruneEvents(db: Executor, before: number): Promise<number> {
  return inTransaction(db, async (trx) => {
    await trx.deleteFrom('webhook_deliveries').where('event_seq', 'in', (eb) => eb.selectFrom('events').select('seq').where('at', '<', before)).execute();
    return Number((await trx.deleteFrom('events').where('at', '<', before).executeTakeFirst()).numDeletedRows);
  });
}

type WebhookRow = Selectable<WebhooksTable>;

const webhookFromRow = (r: WebhookRow): WebhookRecord => ({
  id: r.id, teamId: r.team_id, name: r.name, url: r.url, events: JSON.parse(r.events) as WebhookRecord['events'], secret: r.secret, createdAt: r.created_at, createdBy: r.created_by,
});

type DeliveryRow = Selectable<WebhookDeliveriesTable>;

const deliveryFromRow = (r: DeliveryRow): DeliveryRecord => ({
  id: r.id, webhookId: r.webhook_id, eventSeq: Number(r.event_seq), eventTeamSeq: Number(r.event_team_seq), eventType: r.event_type as DeliveryRecord['eventType'], status: r.status as DeliveryRecord['status'],
  attempts: JSON.parse(r.attempts) as DeliveryRecord['attempts'], nextAttemptAt: r.next_attempt_at, createdAt: r.created_at,
});

/** @throws RamifyError `TEAM_NOT_FOUND`, `CONFLICT` (id taken). */
export async function insertWebhook(db: Executor, w: WebhookRecord): Promise<void> {
  try {
    await db
      .insertInto('webhooks')
      .values({ id: w.id, team_id: w.teamId, name: w.name, url: w.url, events: JSON.stringify(w.events), secret: w.secret, created_at: w.createdAt, created_by: w.createdBy })
      .execute();
  } catch (err) {
    onMissingParent(err, () => notFound('TEAM_NOT_FOUND', 'team', w.teamId, { id: w.teamId }));
    conflictOnConstraint(err, `webhook '${w.id}' already exists`);
  }
}

export async function getWebhook(db: Executor, id: string): Promise<WebhookRecord | null> {
  const row = await db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? webhookFromRow(row) : null;
}

/** Oldest first; only the team's when `teamId` is given. */
export async function listWebhooks(db: Executor, teamId?: string): Promise<WebhookRecord[]> {
  let q = db.selectFrom('webhooks').selectAll();
  if (teamId !== undefined) q = q.where('team_id', '=', teamId);
  return (await q.orderBy('created_at').orderBy('id').execute()).map(webhookFromRow);
}

export async function deleteWebhook(db: Executor, id: string): Promise<boolean> {
  return (await db.deleteFrom('webhooks').where('id', '=', id).executeTakeFirst()).numDeletedRows > 0n;
}

/**
 * Insert unless the webhook already has a delivery of the event (resolves false then); claimed by
 * `claim.holder` for `claim.leaseMs` when given. Rejects (a foreign key violation) when the webhook is gone.
 */
export async function insertDelivery(db: Executor, d: DeliveryRecord, claim?: DeliveryClaim): Promise<boolean> {
  const claimExpiresAt = claim ? (await databaseNow(db)) + claim.leaseMs : null;
  const result = await db
    .insertInto('webhook_deliveries')
    .values({
      id: d.id, webhook_id: d.webhookId, event_seq: d.eventSeq, event_team_seq: d.eventTeamSeq, event_type: d.eventType, status: d.status, attempts: JSON.stringify(d.attempts),
      next_attempt_at: d.nextAttemptAt, created_at: d.createdAt, claimed_by: claim?.holder ?? null, claim_expires_at: claimExpiresAt,
    })
    .onConflict((oc) => oc.columns(['webhook_id', 'event_seq']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

/** Replace status, attempts and next attempt; a pending one stays claimed by `claim.holder` for `claim.leaseMs` when given. */
export async function updateDelivery(db: Executor, d: Pick<DeliveryRecord, 'id' | 'status' | 'attempts' | 'nextAttemptAt'>, claim?: DeliveryClaim): Promise<void> {
  const held = claim !== undefined && d.status === 'pending';
  const claimExpiresAt = held ? (await databaseNow(db)) + claim.leaseMs : null;
  await db
    .updateTable('webhook_deliveries')
    .set({ status: d.status, attempts: JSON.stringify(d.attempts), next_attempt_at: d.nextAttemptAt, ...(held ? { claimed_by: claim.holder, claim_expires_at: claimExpiresAt } : d.status === 'pending' ? {} : { claimed_by: null, claim_expires_at: null }) })
    .where('id', '=', d.id)
    .execute();
}

/**
 * Claim up to `limit` pending deliveries due by now whose claim ran out (or was never taken, or is
 * `claim.holder`'s own: a restarted process takes its own back at once), due first, for `claim.leaseMs`.
 * Postgres skips rows another process is claiming (`FOR UPDATE SKIP LOCKED`), so each goes to one claimer.
 */
export async function claimDeliveries(db: Executor, claim: DeliveryClaim, limit: number): Promise<DeliveryRecord[]> {
  return inTransaction(db, async (trx) => {
    const now = await databaseNow(trx);
    let q = trx
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('status', '=', 'pending')
      .where((eb) => eb.or([eb('next_attempt_at', 'is', null), eb('next_attempt_at', '<=', now)]))
      .where((eb) => eb.or([eb('claim_expires_at', 'is', null), eb('claim_expires_at', '<=', now), eb('claimed_by', '=', claim.holder)]))
      .orderBy('next_attempt_at')
      .orderBy('id')
      .limit(Math.max(1, Math.floor(limit)));
    if (dialectOf(trx) === 'postgres') q = q.forUpdate().skipLocked();
    const ids = (await q.execute()).map((r) => r.id);
    if (ids.length === 0) return [];
    const rows = await trx.updateTable('webhook_deliveries').set({ claimed_by: claim.holder, claim_expires_at: now + claim.leaseMs }).where('id', 'in', ids).returningAll().execute();
    return rows.map(deliveryFromRow).sort((a, b) => (a.nextAttemptAt ?? 0) - (b.nextAttemptAt ?? 0) || a.id.localeCompare(b.id));
  });
}

/** Extend `claim.holder`'s claim on a pending delivery to `claim.leaseMs` from now; false when it is no longer its own or no longer pending. */
export async function renewDeliveryClaim(db: Executor, id: string, claim: DeliveryClaim): Promise<boolean> {
  const now = await databaseNow(db);
  const result = await db
    .updateTable('webhook_deliveries')
    .set({ claim_expires_at: now + claim.leaseMs })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('claimed_by', '=', claim.holder)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Newest first, at most `limit` (1-1000). */
export async function listDeliveries(db: Executor, webhookId: string, limit: number): Promise<DeliveryRecord[]> {
  const n = Math.min(Math.max(Math.floor(limit) || 1, 1), 1000);
  return (await db.selectFrom('webhook_deliveries').selectAll().where('webhook_id', '=', webhookId).orderBy('id', 'desc').limit(n).execute()).map(deliveryFromRow);
}

/** Pending deliveries of every webhook, due first. */
export async function pendingDeliveries(db: Executor, limit: number): Promise<DeliveryRecord[]> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('status', '=', 'pending')
    .orderBy('next_attempt_at', (ob) => ob.asc().nullsFirst())
    .orderBy('id')
    .limit(Math.max(1, Math.floor(limit)))
    .execute();
  return rows.map(deliveryFromRow);
}
