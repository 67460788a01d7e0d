/**
 * Webhooks (docs/design/EVENTS.md): a team's admin keys register URLs that receive its events as signed
 * JSON POSTs. `Webhook.create` returns the signing secret, once; {@link verifyWebhookSignature} checks a
 * delivery on the receiving side.
 */
import { ROUTES } from '@ramify/contracts/client';
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { CreatedWebhook, EventType, ListDeliveriesResponse, ListWebhooksResponse, WebhookDelivery, WebhookInfo } from '@ramify/contracts';
import { resolveConnection, type ConnectionOpts } from './connection.js';
import { ApiClient } from './http.js';

const client = (opts: ConnectionOpts = {}): ApiClient => new ApiClient(resolveConnection(opts));

/** The team's webhooks, as statics taking {@link ConnectionOpts} last (an admin key: a member key gets `FORBIDDEN`). */
export class Webhook {
  private constructor() {}

  /**
   * Register `url` (http or https) for `events` (default every type). Resolves with the webhook and its
   * `secret` (`whsec_...`): keep it, it is shown only here.
   * @throws `VALIDATION_FAILED` (not an http(s) URL, credentials in it, a literal non-public IP while the
   * daemon allows public destinations only, an unknown type), `FORBIDDEN` (a member key).
   */
  static create(url: string, opts: ConnectionOpts & { events?: EventType[]; name?: string } = {}): Promise<CreatedWebhook> {
    const { events, name, ...conn } = opts;
    return client(conn).at(ROUTES.createWebhook, {}).json({ json: { url, ...(events ? { events } : {}), ...(name !== undefined ? { name } : {}) } });
  }

  /** The team's webhooks, oldest first, never their secrets. */
  static async list(opts?: ConnectionOpts): Promise<WebhookInfo[]> {
    return (await client(opts).at(ROUTES.listWebhooks, {}).json<ListWebhooksResponse>()).webhooks;
  }

  /** One webhook. @throws `WEBHOOK_NOT_FOUND` (also another team's). */
  static get(webhookId: string, opts?: ConnectionOpts): Promise<WebhookInfo> {
    return client(opts).at(ROUTES.getWebhook, { webhookId }).json();
  }

  /** Delete a webhook and its delivery log. @throws `WEBHOOK_NOT_FOUND`. */
  static delete(webhookId: string, opts?: ConnectionOpts): Promise<void> {
    return client(opts).at(ROUTES.deleteWebhook, { webhookId }).empty();
  }

  /** Its deliveries, newest first (`limit` 1-1000, default 50): each event's status and attempts. */
  static async deliveries(webhookId: string, opts: ConnectionOpts & { limit?: number } = {}): Promise<WebhookDelivery[]> {
    const { limit, ...conn } = opts;
    return (await client(conn).at(ROUTES.listDeliveries, { webhookId }).json<ListDeliveriesResponse>({ query: { limit } })).deliveries;
  }
}

/** Options of {@link verifyWebhookSignature}. */
export interface VerifyWebhookOpts {
  /** Reject a delivery sent (its signed `delivery.sentAt`) further than this from now, seconds; default 300 (0: do not check). */
  toleranceSeconds?: number;
  /** Now, ms (tests); default `Date.now()`. */
  nowMs?: number;
}

/**
 * Whether a webhook delivery is authentic and fresh: `signature` (header `X-Ramify-Signature`,
 * `sha256=<hex>`) is the HMAC-SHA256 of `rawBody` (the exact bytes received, before any JSON parsing)
 * keyed by the webhook's `secret`, and the body's `delivery.sentAt` (covered by the signature; the
 * `X-Ramify-Timestamp` header repeats it) is within the tolerance of now, so a replayed old delivery is
 * refused. Constant-time comparison.
 */
export function verifyWebhookSignature(rawBody: string | Uint8Array, signature: string | undefined, secret: string, opts: VerifyWebhookOpts = {}): boolean {
  if (!signature) return false;
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`);
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false;
  const tolerance = opts.toleranceSeconds ?? 300;
  if (tolerance <= 0) return true;
  try {
    const text = typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8');
    const sentAt = Date.parse((JSON.parse(text) as { delivery?: { sentAt?: string } }).delivery?.sentAt ?? '');
    return Number.isFinite(sentAt) && Math.abs((opts.nowMs ?? Date.now()) - sentAt) <= tolerance * 1000;
  } catch {
    return false;
  }
}
