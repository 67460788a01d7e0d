/**
 * Event, webhook and delivery rows (migration 20). Events are appended in order (`seq`, AUTOINCREMENT:
 * never reused, so a cursor never points at a newer event after a prune) and read by team, optionally by
 * sandbox and type, from a cursor in either direction.
 */
import { RamifyError } from '@ramify/contracts';
import type { DeliveryRecord, EventQuery, EventRecord, WebhookRecord } from '@ramify/core';
import type { Selectable } from 'kysely';
import { conflictOnConstraint, onMissingParent } from './errors.js';
import { insertRows } from './prepared.js';
import { inTransaction, type EventsTable, type Executor, type WebhookDeliveriesTable, type WebhooksTable } from './schema.js';

type EventRow = Selectable<EventsTable>;

const eventFromRow = (r: EventRow): EventRecord => ({
  seq: r.seq,
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

/** Append one event; returns it with its `seq` (assigned by the database, increasing). */
export async function appendEvent(db: Executor, e: Omit<EventRecord, 'seq'>): Promise<EventRecord> {
  const row = { type: e.type, at: e.at, team_id: e.teamId, sandbox_id: e.sandboxId, key_id: e.keyId, cause: e.cause, data: JSON.stringify(e.data) };
  const { rows } = await insertRows<{ seq: number }>(db, 'events', [row], 'seq');
  return { ...e, seq: Number(rows[0]?.seq) };
}

/** One page of a team's events (see {@link EventQuery}). */
export async function listEvents(db: Executor, q: EventQuery): Promise<EventRecord[]> {
  let query = db.selectFrom('events').selectAll().where('team_id', '=', q.teamId);
  if (q.sandboxId !== undefined) query = query.where('sandbox_id', '=', q.sandboxId);
  if (q.types && q.types.length > 0) query = query.where('type', 'in', q.types);
  if (q.afterSeq !== undefined) query = query.where('seq', q.order === 'asc' ? '>' : '<', q.afterSeq);
  const limit = Math.min(Math.max(Math.floor(q.limit) || 1, 1), MAX_READ);
  return (await query.orderBy('seq', q.order === 'asc' ? 'asc' : 'desc').limit(limit).execute()).map(eventFromRow);
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
  id: r.id, webhookId: r.webhook_id, eventSeq: r.event_seq, eventType: r.event_type as DeliveryRecord['eventType'], status: r.status as DeliveryRecord['status'],
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
    onMissingParent(err, () => new RamifyError('TEAM_NOT_FOUND', `team '${w.teamId}' not found`, { id: w.teamId }));
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

/** Rejects (a foreign key violation) when the webhook is gone. */
export async function insertDelivery(db: Executor, d: DeliveryRecord): Promise<void> {
  await db
    .insertInto('webhook_deliveries')
    .values({
      id: d.id, webhook_id: d.webhookId, event_seq: d.eventSeq, event_type: d.eventType, status: d.status, attempts: JSON.stringify(d.attempts),
      next_attempt_at: d.nextAttemptAt, created_at: d.createdAt,
    })
    .execute();
}

export async function updateDelivery(db: Executor, d: Pick<DeliveryRecord, 'id' | 'status' | 'attempts' | 'nextAttemptAt'>): Promise<void> {
  await db.updateTable('webhook_deliveries').set({ status: d.status, attempts: JSON.stringify(d.attempts), next_attempt_at: d.nextAttemptAt }).where('id', '=', d.id).execute();
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
