/**
 * The part of the Store port that keeps what happened (docs/design/EVENTS.md): lifecycle events, the
 * team's webhooks and their deliveries, and the commands seen to end in each sandbox. Every list is bounded
 * and pruned by age (the daemon's retention). Times are ms since the epoch. `Store` extends this.
 */
import type { DeliveryAttempt, EventCause, EventType } from '@ramify/contracts';

/**
 * One stored event. `seq` orders every team's events together (it grows with every append; internal: a
 * delivery names its event by it); `teamSeq` is its number in its team's stream (1, 2, 3, ... per team,
 * never reused), which makes its API id and cursor (`events/cursor.ts`).
 */
export interface EventRecord {
  seq: number;
  teamSeq: number;
  type: EventType;
  at: number;
  sandboxId: string | null;
  teamId: string;
  keyId: string | null;
  cause: EventCause;
  data: Record<string, unknown>;
}

/** A page query of one team's events. */
export interface EventQuery {
  teamId: string;
  sandboxId?: string;
  /** Only these types; absent or empty: every type. */
  types?: readonly EventType[];
  /** `asc`: teamSeq > afterTeamSeq, ascending; `desc`: teamSeq < afterTeamSeq, descending. Absent: from the start (asc) or the newest (desc). */
  afterTeamSeq?: number;
  order: 'asc' | 'desc';
  /** 1-1001 (one more than a page, to tell whether more follow). */
  limit: number;
}

/** A team's webhook; `secret` signs its deliveries (it is kept in the store: HMAC needs it). */
export interface WebhookRecord {
  id: string;
  teamId: string;
  name: string;
  url: string;
  /** Event types it takes. */
  events: EventType[];
  secret: string;
  createdAt: number;
  createdBy: string | null;
}

/** One event's delivery to one webhook. */
export interface DeliveryRecord {
  id: string;
  webhookId: string;
  eventSeq: number;
  /** The event's number in its team's stream (its id). */
  eventTeamSeq: number;
  eventType: EventType;
  status: 'pending' | 'delivered' | 'failed';
  /** Every attempt so far, oldest first (`at` as ms). */
  attempts: Array<Omit<DeliveryAttempt, 'at'> & { at: number }>;
  nextAttemptAt: number | null;
  createdAt: number;
}

/** A command the daemon saw end (see `CommandLogEntry` in contracts). */
export interface CommandLogRecord {
  sandboxId: string;
  /** Start, ms. */
  at: number;
  pid: number;
  cmd: string;
  exitCode: number | null;
  signal: string | null;
  error: string | null;
  durationMs: number;
  keyId: string | null;
}

/** Sandboxes per state and runtime (the metrics gauge). */
export interface SandboxCount {
  state: string;
  runtime: string;
  count: number;
}

/** Who is attempting a delivery, and for how long its claim holds without renewal (ms, database clock). */
export interface DeliveryClaim {
  /** The claiming process (its host id). */
  holder: string;
  leaseMs: number;
}

/**
 * How a store shared by several processes tells each one that events were appended (by any process).
 * A declared capability: null on a store only one process opens (SQLite), where the recorder's own
 * publishing is every event there is.
 */
export interface EventNotifications {
  /**
   * Call `onAppend` after appends commit (coalesced: one call may stand for several, and a call may come
   * with nothing new: the caller reads the positions to see), and once after each (re)connection.
   * A failure of the listening side is passed to `onError` and it reconnects by itself. Resolves once the
   * first attempt to listen is over (listening or not); the returned function stops for good.
   */
  listen(onAppend: () => void, onError: (err: Error) => void): Promise<() => Promise<void>>;
}

export interface EventStore {
  /** Appends by other processes are heard through this; null when no other process shares the store. */
  readonly eventNotifications: EventNotifications | null;
  /** Every team's last event number given out (pruning does not lower it), by team id. One small read. */
  eventPositions(): Promise<Array<{ teamId: string; lastTeamSeq: number }>>;
  /**
   * Append one event; resolves with it, `seq` and `teamSeq` (its team's next number, from a counter that
   * never goes back, taken in the same transaction) assigned. Rejects only on a store failure.
   */
  appendEvent(event: Omit<EventRecord, 'seq' | 'teamSeq'>): Promise<EventRecord>;
  /** One page of a team's events (see {@link EventQuery}). */
  listEvents(query: EventQuery): Promise<EventRecord[]>;
  /** The event of global number `seq`, or null (pruned, never made). */
  getEvent(seq: number): Promise<EventRecord | null>;
  /** The team's last event number given out (0 before its first event; pruning does not lower it). */
  lastEventTeamSeq(teamId: string): Promise<number>;
  /** Delete events (and the deliveries of their webhooks) older than `before`; resolves with how many events went. */
  pruneEvents(before: number): Promise<number>;

  /** Rejects `CONFLICT` when the id is taken, `TEAM_NOT_FOUND` for an unknown team. */
  insertWebhook(record: WebhookRecord): Promise<void>;
  getWebhook(id: string): Promise<WebhookRecord | null>;
  /** Oldest first; a team's only when `teamId` is given. */
  listWebhooks(teamId?: string): Promise<WebhookRecord[]>;
  /** Delete it and its deliveries. @returns whether it existed. */
  deleteWebhook(id: string): Promise<boolean>;

  /**
   * Record a delivery, claimed by `claim` when given; resolves false (nothing written) when the webhook
   * already has a delivery of that event (each (webhook, event) is delivered once, whoever matched it).
   * Rejects when the webhook is gone (a delivery of a deleted webhook is not kept).
   */
  insertDelivery(record: DeliveryRecord, claim?: DeliveryClaim): Promise<boolean>;
  /** Replace status, attempts and next attempt (a pending one stays claimed by `claim` when given); no-op when it is gone. */
  updateDelivery(record: Pick<DeliveryRecord, 'id' | 'status' | 'attempts' | 'nextAttemptAt'>, claim?: DeliveryClaim): Promise<void>;
  /**
   * Claim up to `limit` pending deliveries that are due and unclaimed (never claimed, claim run out, or
   * `claim.holder`'s own), due first; each is claimed by one caller only, across processes.
   */
  claimDeliveries(claim: DeliveryClaim, limit: number): Promise<DeliveryRecord[]>;
  /** Extend the holder's claim on a pending delivery; false when another holds it now or it is settled. */
  renewDeliveryClaim(id: string, claim: DeliveryClaim): Promise<boolean>;
  /** A webhook's deliveries, newest first, at most `limit`. */
  listDeliveries(webhookId: string, limit: number): Promise<DeliveryRecord[]>;
  /** Pending deliveries of every webhook, oldest first, at most `limit` (re-queued when the daemon starts). */
  pendingDeliveries(limit: number): Promise<DeliveryRecord[]>;

  /** Append commands (one transaction); entries of unknown sandboxes are skipped. Each sandbox keeps its newest 1000. */
  appendCommandLog(entries: readonly CommandLogRecord[]): Promise<number>;
  /** A sandbox's newest commands, newest first, at most `limit`. */
  listCommandLog(sandboxId: string, limit: number): Promise<CommandLogRecord[]>;
  /** Delete command entries that started before `before`. */
  pruneCommandLog(before: number): Promise<number>;

  /** Sandboxes that are not killed, per state and runtime. */
  countSandboxes(): Promise<SandboxCount[]>;
}
