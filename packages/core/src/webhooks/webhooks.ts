/**
 * Use-cases: a team's webhooks (docs/design/EVENTS.md). Only admin keys manage them (a member key gets
 * 403 `FORBIDDEN`); a webhook of another team is 404 `WEBHOOK_NOT_FOUND`, as an unknown id. The signing
 * secret is made here, returned once by {@link createWebhook}, and kept in the store (HMAC needs it).
 */
import { EVENT_TYPES, RamifyError, notFound, type CreateWebhookRequest, type WebhookDelivery, type WebhookInfo } from '@ramify/contracts';
import { requireAdmin, type Actor } from '../access/actor.js';
import type { Core } from '../context.js';
import { newWebhookId } from '../ids.js';
import { eventId } from '../events/cursor.js';
import type { DeliveryRecord, WebhookRecord } from '../ports/event-store.js';
import { checkWebhookUrlHost, redactWebhookUrl } from './destination.js';
import { DEFAULT_WEBHOOK_TUNABLES } from './dispatcher.js';

/** Prefix of a webhook's signing secret. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';
/** Default and largest page of a delivery log. */
export const DELIVERIES_DEFAULT_LIMIT = 50;

const iso = (ms: number): string => new Date(ms).toISOString();

/** The API shape of a webhook (never its secret, nor credentials a URL stored before they were refused carries). */
export function toWebhookInfo(r: WebhookRecord): WebhookInfo {
  return { id: r.id, team: r.teamId, name: r.name, url: redactWebhookUrl(r.url), events: [...r.events], createdAt: iso(r.createdAt), createdBy: r.createdBy };
}

/** The API shape of a delivery of a webhook of team `teamId`. */
export function toDeliveryInfo(r: DeliveryRecord, teamId: string): WebhookDelivery {
  return {
    id: r.id, webhookId: r.webhookId, eventId: eventId(teamId, r.eventTeamSeq), eventType: r.eventType, status: r.status,
    attempts: r.attempts.map((a) => ({ ...a, at: iso(a.at) })),
    nextAttemptAt: r.nextAttemptAt === null ? null : iso(r.nextAttemptAt), createdAt: iso(r.createdAt),
  };
}

/**
 * Register a webhook for the caller's team (its URL and types already validated by `CreateWebhookRequest`).
 * @returns the webhook and its secret (the only time the secret is shown).
 * @throws RamifyError `FORBIDDEN` for a member key; `VALIDATION_FAILED` for a URL whose literal host is a
 * non-public IP while the daemon allows only public destinations (`destination.ts`).
 */
export async function createWebhook(core: Core, actor: Actor, request: CreateWebhookRequest): Promise<{ webhook: WebhookRecord; secret: string }> {
  requireAdmin(actor, 'managing webhooks');
  const secret = WEBHOOK_SECRET_PREFIX + Buffer.from(core.entropy(32)).toString('base64url');
  const url = new URL(request.url);
  checkWebhookUrlHost(url, core.options.webhooks.allowPrivateDestinations ?? DEFAULT_WEBHOOK_TUNABLES.allowPrivateDestinations);
  const webhook: WebhookRecord = {
    id: newWebhookId(),
    teamId: actor.teamId,
    name: request.name ?? url.host,
    url: request.url,
    events: request.events ? [...new Set(request.events)] : [...EVENT_TYPES],
    secret,
    createdAt: core.clock.now(),
    createdBy: actor.keyId,
  };
  await core.store.insertWebhook(webhook);
  core.webhooks.refresh(webhook.teamId, await core.store.listWebhooks(webhook.teamId));
  return { webhook, secret };
}

/** The caller's team's webhooks, oldest first. @throws RamifyError `FORBIDDEN` for a member key. */
export async function listWebhooks(core: Core, actor: Actor): Promise<WebhookRecord[]> {
  requireAdmin(actor, 'managing webhooks');
  return core.store.listWebhooks(actor.teamId);
}

/**
 * The caller's team's webhook `id`.
 * @throws RamifyError `FORBIDDEN` for a member key, `WEBHOOK_NOT_FOUND` for an unknown id and another team's alike.
 */
export async function getWebhook(core: Core, actor: Actor, id: string): Promise<WebhookRecord> {
  requireAdmin(actor, 'managing webhooks');
  const webhook = await core.store.getWebhook(id);
  if (!webhook || webhook.teamId !== actor.teamId) throw notFound('WEBHOOK_NOT_FOUND', 'webhook', id, { id });
  return webhook;
}

/** Delete the webhook and its delivery log; nothing more is sent to it. @throws RamifyError as {@link getWebhook}. */
export async function deleteWebhook(core: Core, actor: Actor, id: string): Promise<void> {
  const webhook = await getWebhook(core, actor, id);
  await core.store.deleteWebhook(webhook.id);
  core.webhooks.refresh(webhook.teamId, await core.store.listWebhooks(webhook.teamId));
}

/** The webhook's deliveries, newest first (`limit` 1-1000, default 50). @throws RamifyError as {@link getWebhook}. */
export async function listDeliveries(core: Core, actor: Actor, id: string, limit = DELIVERIES_DEFAULT_LIMIT): Promise<DeliveryRecord[]> {
  const webhook = await getWebhook(core, actor, id);
  return core.store.listDeliveries(webhook.id, limit);
}
