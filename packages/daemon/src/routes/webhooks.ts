/**
 * Webhook routes (docs/design/EVENTS.md): a team's webhooks and their delivery logs, managed by admin
 * keys (a member key gets 403); another team's webhook is 404 WEBHOOK_NOT_FOUND. The signing secret is in
 * the create answer only.
 */
import { CreatedWebhook, CreateWebhookRequest, ListDeliveriesQuery, ListDeliveriesResponse, ListWebhooksResponse, WebhookInfo, WebhookParams } from '@ramify/contracts';
import { createWebhook, deleteWebhook, getWebhook, listDeliveries, listWebhooks, toDeliveryInfo, toWebhookInfo } from '@ramify/core';
import { route, type RouteSpec } from '../http/route.js';

export const webhookRoutes: RouteSpec[] = [
  route({
    operation: 'createWebhook', summary: "Register a webhook for the team's events (an admin key); the signing secret is in this answer only",
    description: 'url: http:// or https:// without user:password@ (anything else is 400: the body is signed, so a token, if any, goes in the path or query). '
      + 'Destinations are public addresses only unless the daemon runs with --webhook-allow-private: a literal non-public IP is 400 here, a name resolving to one fails its deliveries at once, saying why. events: the types to deliver (default all; an unknown one is 400). Each delivery is a JSON POST of the event '
      + 'with X-Ramify-Signature: sha256=<hex HMAC-SHA256 of the raw body keyed by the secret> and X-Ramify-Timestamp; a non-2xx or no answer within 10 s is retried with exponential backoff.',
    body: CreateWebhookRequest, response: CreatedWebhook, status: 201,
    handler: async ({ core, body, actor }) => {
      const { webhook, secret } = await createWebhook(core, actor, body);
      return { ...toWebhookInfo(webhook), secret };
    },
  }),
  route({
    operation: 'listWebhooks', summary: "The team's webhooks (an admin key), never their secrets", response: ListWebhooksResponse,
    handler: async ({ core, actor }) => ({ webhooks: (await listWebhooks(core, actor)).map(toWebhookInfo) }),
  }),
  route({
    operation: 'getWebhook', summary: 'One webhook (an admin key)', params: WebhookParams, response: WebhookInfo,
    handler: async ({ core, params, actor }) => toWebhookInfo(await getWebhook(core, actor, params.webhookId)),
  }),
  route({
    operation: 'deleteWebhook', summary: 'Delete a webhook and its delivery log (an admin key); nothing more is sent to it',
    params: WebhookParams, status: 204,
    handler: async ({ core, params, actor }) => deleteWebhook(core, actor, params.webhookId),
  }),
  route({
    operation: 'listDeliveries', summary: "A webhook's delivery log, newest first: each event's status and attempts (status code, error, duration)",
    params: WebhookParams, query: ListDeliveriesQuery, response: ListDeliveriesResponse,
    handler: async ({ core, params, query, actor }) => ({ deliveries: (await listDeliveries(core, actor, params.webhookId, query.limit)).map((d) => toDeliveryInfo(d, actor.teamId)) }),
  }),
];
