/**
 * Event, webhook and delivery rows (migration 20). Events are appended in order (`seq`, AUTOINCREMENT:
 * never reused, so a cursor never points at a newer event after a prune) and read by team, optionally by
 * sandbox and type, from a cursor in either direction.
 */
import { RamifyError } from '@ramify/contracts';
import type { DeliveryRecord, EventQuery, EventRecord, WebhookRecord } from '@ramify/core';
import type { Statement } from 'better-sqlite3';
import { conflictOnConstraint, type Db } from './db.js';

interface EventRow {
  seq: number;
  type: string;
  at: number;
  team_id: string;
  sandbox_id: string | null;
  key_id: string | null;
  cause: string;
  data: string;
}

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

export class EventRows {
  readonly #db: Db;
  readonly #insert;
  /** Prepared listing statements by their SQL (a handful of shapes). */
  readonly #lists = new Map<string, Statement>();

  constructor(db: Db) {
    this.#db = db;
    this.#insert = db.prepare('INSERT INTO events (type, at, team_id, sandbox_id, key_id, cause, data) VALUES (?, ?, ?, ?, ?, ?, ?)');
  }

  append(e: Omit<EventRecord, 'seq'>): EventRecord {
    const seq = Number(this.#insert.run(e.type, e.at, e.teamId, e.sandboxId, e.keyId, e.cause, JSON.stringify(e.data)).lastInsertRowid);
    return { ...e, seq };
  }

  list(q: EventQuery): EventRecord[] {
    const where = ['team_id = ?'];
    const args: unknown[] = [q.teamId];
    if (q.sandboxId !== undefined) {
      where.push('sandbox_id = ?');
      args.push(q.sandboxId);
    }
    if (q.types && q.types.length > 0) {
      where.push(`type IN (${q.types.map(() => '?').join(', ')})`);
      args.push(...q.types);
    }
    if (q.afterSeq !== undefined) {
      where.push(q.order === 'asc' ? 'seq > ?' : 'seq < ?');
      args.push(q.afterSeq);
    }
    const sql = `SELECT * FROM events WHERE ${where.join(' AND ')} ORDER BY seq ${q.order === 'asc' ? 'ASC' : 'DESC'} LIMIT ?`;
    let statement = this.#lists.get(sql);
    if (!statement) this.#lists.set(sql, (statement = this.#db.prepare(sql)));
    return (statement.all(...args, Math.min(Math.max(Math.floor(q.limit) || 1, 1), MAX_READ)) as EventRow[]).map(eventFromRow);
  }

  /** Delete events before `before` and the deliveries of them, in one transaction; returns the events deleted. */
  prune(before: number): number {
    return this.#db.transaction(() => {
      this.#db.prepare('DELETE FROM webhook_deliveries WHERE event_seq IN (SELECT seq FROM events WHERE at < ?)').run(before);
      return this.#db.prepare('DELETE FROM events WHERE at < ?').run(before).changes;
    })();
  }
}

interface WebhookRow {
  id: string;
  team_id: string;
  name: string;
  url: string;
  events: string;
  secret: string;
  created_at: number;
  created_by: string | null;
}

const webhookFromRow = (r: WebhookRow): WebhookRecord => ({
  id: r.id, teamId: r.team_id, name: r.name, url: r.url, events: JSON.parse(r.events) as WebhookRecord['events'], secret: r.secret, createdAt: r.created_at, createdBy: r.created_by,
});

interface DeliveryRow {
  id: string;
  webhook_id: string;
  event_seq: number;
  event_type: string;
  status: string;
  attempts: string;
  next_attempt_at: number | null;
  created_at: number;
}

const deliveryFromRow = (r: DeliveryRow): DeliveryRecord => ({
  id: r.id, webhookId: r.webhook_id, eventSeq: r.event_seq, eventType: r.event_type as DeliveryRecord['eventType'], status: r.status as DeliveryRecord['status'],
  attempts: JSON.parse(r.attempts) as DeliveryRecord['attempts'], nextAttemptAt: r.next_attempt_at, createdAt: r.created_at,
});

export class WebhookRows {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  insert(w: WebhookRecord): void {
    try {
      this.#db
        .prepare('INSERT INTO webhooks (id, team_id, name, url, events, secret, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
        .run(w.id, w.teamId, w.name, w.url, JSON.stringify(w.events), w.secret, w.createdAt, w.createdBy);
    } catch (err) {
      if ((err as { code?: unknown }).code === 'SQLITE_CONSTRAINT_FOREIGNKEY') throw new RamifyError('TEAM_NOT_FOUND', `team '${w.teamId}' not found`, { id: w.teamId });
      conflictOnConstraint(err, `webhook '${w.id}' already exists`);
    }
  }

  get(id: string): WebhookRecord | null {
    const row = this.#db.prepare('SELECT * FROM webhooks WHERE id = ?').get(id) as WebhookRow | undefined;
    return row ? webhookFromRow(row) : null;
  }

  list(teamId?: string): WebhookRecord[] {
    const rows = teamId === undefined
      ? this.#db.prepare('SELECT * FROM webhooks ORDER BY created_at, id').all()
      : this.#db.prepare('SELECT * FROM webhooks WHERE team_id = ? ORDER BY created_at, id').all(teamId);
    return (rows as WebhookRow[]).map(webhookFromRow);
  }

  delete(id: string): boolean {
    return this.#db.prepare('DELETE FROM webhooks WHERE id = ?').run(id).changes > 0;
  }

  insertDelivery(d: DeliveryRecord): void {
    this.#db
      .prepare('INSERT INTO webhook_deliveries (id, webhook_id, event_seq, event_type, status, attempts, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run(d.id, d.webhookId, d.eventSeq, d.eventType, d.status, JSON.stringify(d.attempts), d.nextAttemptAt, d.createdAt);
  }

  updateDelivery(d: Pick<DeliveryRecord, 'id' | 'status' | 'attempts' | 'nextAttemptAt'>): void {
    this.#db.prepare('UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ? WHERE id = ?').run(d.status, JSON.stringify(d.attempts), d.nextAttemptAt, d.id);
  }

  listDeliveries(webhookId: string, limit: number): DeliveryRecord[] {
    const n = Math.min(Math.max(Math.floor(limit) || 1, 1), 1000);
    return (this.#db.prepare('SELECT * FROM webhook_deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT ?').all(webhookId, n) as DeliveryRow[]).map(deliveryFromRow);
  }

  pending(limit: number): DeliveryRecord[] {
    return (this.#db.prepare("SELECT * FROM webhook_deliveries WHERE status = 'pending' ORDER BY next_attempt_at, id LIMIT ?").all(Math.max(1, Math.floor(limit))) as DeliveryRow[]).map(deliveryFromRow);
  }
}
