/**
 * The events contract (docs/design/EVENTS.md): lifecycle events of a team's sandboxes, listed with a
 * cursor (`GET /v1/events`), streamed live (`/v1/events/stream`, a WebSocket) and delivered to the team's
 * webhooks (signed JSON POSTs); and a sandbox's timeline, which joins its lifecycle events with the
 * commands run in it and its egress and ingress decisions.
 */
import { z } from 'zod';
import { EVENT_TYPES } from './constants.js';
import { quote } from './issue-messages.js';
import { EgressLogEntry, IngressLogEntry } from './api.js';

export const EventType = z.enum(EVENT_TYPES);
export type EventType = z.infer<typeof EventType>;

/**
 * What made an event happen: `api` (a call with an API key: `keyId` says which), `timeout` (the sandbox's
 * deadline), `idle` (idle auto-pause), `wake` (an ingress request or SSH login resumed it), `budget` (its
 * fork tree's budget), `runtime` (its instance was lost, or the agent reported), `system` (the daemon:
 * reconcile, a failed create's clean-up).
 */
export const EventCause = z.enum(['api', 'timeout', 'idle', 'wake', 'budget', 'runtime', 'system']);
export type EventCause = z.infer<typeof EventCause>;

/**
 * An event id, also the cursor of event listings and streams: opaque, of the form `evt_<stream>_<n>`, per
 * team (`n` counts the team's own events). Only its length is checked here; the daemon refuses anything
 * that is not one of the caller's team's ids with 400 `INVALID_CURSOR`.
 */
export const EventId = z.string().min(1).max(128);

/** One event (webhooks deliver this object, plus `delivery`). */
export const SandboxEvent = z.object({
  /**
   * Opaque, unique within the team (`evt_<stream>_<n>`: n is the event's number in its team's stream, so it
   * grows with the team's events in the order they happened). Receivers of webhooks dedupe on it.
   */
  id: z.string(),
  type: EventType,
  /** When it happened (ISO time). */
  at: z.string(),
  /** The sandbox it is about; null for an event of a team (none yet). */
  sandboxId: z.string().nullable(),
  team: z.string(),
  /** The API key whose call caused it (`key_...`), or null when none did (a timeout, a wake, the daemon). */
  keyId: z.string().nullable(),
  cause: EventCause,
  /**
   * Per type: created `{ parentId, templateId, sourceSnapshotId, runtime }`; paused, resumed, killed `{}`;
   * forked `{ childIds, snapshotId }`; snapshotted `{ snapshotId, name }`; timed_out `{ action }`;
   * error `{ error }`; oom `{ pid, ... }`; budget.exceeded as budgets report it.
   */
  data: z.record(z.string(), z.unknown()),
});
export type SandboxEvent = z.infer<typeof SandboxEvent>;

/**
 * `type=` of listings and streams: comma-separated event types. An unknown one (or none) is worded as
 * the other enum errors (issue-messages.ts) and the sandbox `state=` list: `must be event types from
 * sandbox.lifecycle.created, ..., comma-separated, got 'sandbox.lifecycle.nope'` (the first unknown, cut).
 */
const TypeList = z
  .string()
  .max(1000)
  .transform((s, ctx) => {
    const types = s.split(',').map((t) => t.trim()).filter((t) => t !== '');
    const unknown = types.find((t) => !(EVENT_TYPES as readonly string[]).includes(t));
    if (unknown !== undefined || types.length === 0) {
      ctx.addIssue({ code: 'custom', message: `must be event types from ${EVENT_TYPES.join(', ')}, comma-separated, got ${quote(unknown ?? s)}` });
      return z.NEVER;
    }
    return types as EventType[];
  });

/** Default and largest page of `GET /v1/events`. */
export const EVENTS_DEFAULT_LIMIT = 100;
export const EVENTS_MAX_LIMIT = 1000;

/** `GET /v1/events` query. */
export const ListEventsQuery = z.strictObject({
  /** Only this sandbox's events (another team's sandbox: 404). */
  sandboxId: z.string().min(1).max(128).optional(),
  /** Only these types (comma-separated); an unknown one is 400. */
  type: TypeList.optional(),
  /** The `nextCursor` of the previous page: the page continues after it, in the listing's order. */
  after: EventId.optional(),
  limit: z.coerce.number().int().min(1).max(EVENTS_MAX_LIMIT).optional(),
  /** `asc` (default): oldest first, for following; `desc`: newest first. */
  order: z.enum(['asc', 'desc']).optional(),
});
export type ListEventsQuery = z.input<typeof ListEventsQuery>;

/** One page of events. */
export const ListEventsResponse = z.object({
  events: z.array(SandboxEvent),
  /**
   * Pass as `after` for the next page. Oldest first: the last event's id (or the `after` given when the
   * page is empty), so polling with it returns only newer events; newest first: null after the last page.
   */
  nextCursor: z.string().nullable(),
  /** Whether more events matched than the page holds (now). */
  hasMore: z.boolean(),
});
export type ListEventsResponse = z.infer<typeof ListEventsResponse>;

/** `/v1/events/stream` query (a WebSocket): the listing's filters; `after` replays what followed it first. */
export const EventStreamQuery = z.strictObject({
  sandboxId: z.string().min(1).max(128).optional(),
  type: TypeList.optional(),
  after: EventId.optional(),
});
export type EventStreamQuery = z.input<typeof EventStreamQuery>;

/**
 * Frames of `/v1/events/stream` (text, JSON): `ready` once subscribed (after replaying what followed `after`),
 * then one `event` per event, oldest first; `error` then close 1008/1011 on a refusal. A client too slow to
 * read is closed with 1013 (try again): reconnect with `after` = the last id it got.
 */
export type EventStreamFrame =
  | { type: 'ready'; after: string | null }
  | { type: 'event'; event: SandboxEvent }
  | { type: 'error'; code: string; message: string };

/** The header carrying a delivery's signature: `sha256=` + hex HMAC-SHA256 of the raw body, keyed by the webhook's secret. */
export const WEBHOOK_SIGNATURE_HEADER = 'x-ramify-signature';
/** Unix seconds the delivery attempt was sent at (also `delivery.sentAt` inside the signed body). */
export const WEBHOOK_TIMESTAMP_HEADER = 'x-ramify-timestamp';
/** The webhook's id, the event's id and the delivery's id, for logs and de-duplication. */
export const WEBHOOK_ID_HEADER = 'x-ramify-webhook-id';
export const WEBHOOK_EVENT_HEADER = 'x-ramify-event-id';
export const WEBHOOK_DELIVERY_HEADER = 'x-ramify-delivery-id';

/**
 * A webhook URL: http or https, at most 2048 characters, without userinfo (credentials). Its host is checked
 * against the daemon's destination policy at create (a literal IP) and at each delivery (core's `webhooks/destination.ts`).
 */
export const WebhookUrl = z
  .string()
  .max(2048)
  .refine((s) => {
    try {
      const url = new URL(s);
      return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
    } catch {
      return false;
    }
  }, 'a webhook URL is an absolute http:// or https:// URL')
  .refine((s) => {
    try {
      const url = new URL(s);
      return url.username === '' && url.password === '';
    } catch {
      return true;
    }
  }, "a webhook URL carries no credentials (user:password@): each delivery's body is signed with the webhook's secret, so none are needed; if the receiver needs a token, put it in the path or the query");

/** `POST /v1/webhooks`. */
export const CreateWebhookRequest = z.strictObject({
  url: WebhookUrl,
  /** Event types to deliver; default every type. */
  events: z.array(EventType).min(1).max(EVENT_TYPES.length).optional(),
  name: z.string().min(1).max(128).optional(),
});
export type CreateWebhookRequest = z.infer<typeof CreateWebhookRequest>;

/** A webhook (never its secret). */
export const WebhookInfo = z.object({
  /** `whk_...`. */
  id: z.string(),
  team: z.string(),
  name: z.string(),
  url: z.string(),
  events: z.array(EventType),
  createdAt: z.string(),
  /** The API key that made it. */
  createdBy: z.string().nullable(),
});
export type WebhookInfo = z.infer<typeof WebhookInfo>;

/** The create answer: the webhook and its signing secret (`whsec_...`), shown this once only. */
export const CreatedWebhook = WebhookInfo.extend({ secret: z.string() });
export type CreatedWebhook = z.infer<typeof CreatedWebhook>;

export const ListWebhooksResponse = z.object({ webhooks: z.array(WebhookInfo) });
export type ListWebhooksResponse = z.infer<typeof ListWebhooksResponse>;

/** `/v1/webhooks/:webhookId` params. */
export const WebhookParams = z.strictObject({ webhookId: z.string().min(1).max(64) });

/** One attempt of a delivery. */
export const DeliveryAttempt = z.object({
  at: z.string(),
  /** The receiver's HTTP status; null when no answer came (timeout, refused, reset). */
  statusCode: z.number().int().nullable(),
  /** Why it failed; null for a 2xx. */
  error: z.string().nullable(),
  durationMs: z.number(),
});
export type DeliveryAttempt = z.infer<typeof DeliveryAttempt>;

/**
 * One event's delivery to one webhook: `pending` (waiting for its next attempt), `delivered` (a 2xx),
 * `failed` (every attempt failed, or it could not be queued).
 */
export const WebhookDelivery = z.object({
  /** `dlv_...`. */
  id: z.string(),
  webhookId: z.string(),
  eventId: z.string(),
  eventType: EventType,
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.array(DeliveryAttempt),
  /** When the next attempt is due (ISO time); null unless pending. */
  nextAttemptAt: z.string().nullable(),
  createdAt: z.string(),
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const ListDeliveriesQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(1000).optional() });
export const ListDeliveriesResponse = z.object({ deliveries: z.array(WebhookDelivery) });
export type ListDeliveriesResponse = z.infer<typeof ListDeliveriesResponse>;

/**
 * What a webhook receives: the event, and which delivery attempt this is. The signature covers these
 * exact bytes, `delivery.sentAt` included (reject a stale one to stop replays).
 */
export interface WebhookPayload extends SandboxEvent {
  delivery: { id: string; webhookId: string; attempt: number; sentAt: string };
}

/** A command the daemon saw end in a sandbox (started over the API; its exit observed). */
export const CommandLogEntry = z.object({
  /** When it started (ISO time). */
  at: z.string(),
  pid: z.number().int(),
  /** The command line, at most 1024 characters (longer ones end in `…`). */
  cmd: z.string(),
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  /** `timeout`, `oom`, or null. */
  error: z.string().nullable(),
  durationMs: z.number(),
  keyId: z.string().nullable(),
});
export type CommandLogEntry = z.infer<typeof CommandLogEntry>;

/** One entry of a sandbox's timeline. */
export const TimelineEntry = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('lifecycle'), at: z.string(), event: SandboxEvent }),
  z.object({ kind: z.literal('command'), at: z.string(), command: CommandLogEntry }),
  z.object({ kind: z.literal('egress'), at: z.string(), egress: EgressLogEntry }),
  z.object({ kind: z.literal('ingress'), at: z.string(), ingress: IngressLogEntry }),
]);
export type TimelineEntry = z.infer<typeof TimelineEntry>;

/** Default and largest timeline window. */
export const TIMELINE_DEFAULT_LIMIT = 200;
export const TIMELINE_MAX_LIMIT = 1000;

/** `GET /v1/sandboxes/:id/timeline` query: the newest `limit` entries, shown newest (`desc`, default) or oldest first. */
export const TimelineQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(TIMELINE_MAX_LIMIT).optional(),
  order: z.enum(['asc', 'desc']).optional(),
});
export type TimelineQuery = z.input<typeof TimelineQuery>;
export const TimelineResponse = z.object({ entries: z.array(TimelineEntry) });
export type TimelineResponse = z.infer<typeof TimelineResponse>;
