/**
 * `ramify webhook add|list|rm|deliveries`: the team's webhooks (admin keys; docs/design/EVENTS.md). The
 * signing secret is printed once, at `add`.
 */
import { EVENT_TYPES } from '@ramify/contracts/client';
import type { EventType } from '@ramify/contracts';
import { Webhook, type WebhookDelivery, type WebhookInfo } from '@ramify/sdk';
import type { Command } from 'commander';
import { action, type CliEnv } from '../context.js';
import { intIn, listOf } from '../parse.js';
import { renderTable } from '../output/table.js';
import { formatRelative } from '../output/format.js';

function webhooksTable(webhooks: WebhookInfo[]): string {
  if (webhooks.length === 0) return 'no webhooks';
  return renderTable(['ID', 'NAME', 'URL', 'EVENTS', 'CREATED'], webhooks.map((w) => [
    w.id, w.name, w.url, w.events.length === EVENT_TYPES.length ? 'all' : w.events.join(','), formatRelative(w.createdAt),
  ]));
}

function deliveriesTable(deliveries: WebhookDelivery[]): string {
  if (deliveries.length === 0) return 'no deliveries';
  return renderTable(['ID', 'EVENT', 'TYPE', 'STATUS', 'ATTEMPTS', 'LAST'], deliveries.map((d) => {
    const last = d.attempts.at(-1);
    const lastText = last ? `${last.statusCode ?? (last.error ? 'not delivered' : 'no answer')}${last.error ? ` (${last.error})` : ''}, ${last.durationMs} ms` : '-';
    return [d.id, d.eventId, d.eventType, d.status + (d.nextAttemptAt ? ` (next ${formatRelative(d.nextAttemptAt)})` : ''), String(d.attempts.length), lastText];
  }));
}

const VERIFY_HELP = `
Each delivery is a JSON POST of the event (plus "delivery": { id, webhookId, attempt, sentAt }) with
  X-Ramify-Signature: sha256=<hex HMAC-SHA256 of the raw body, keyed by the secret>
  X-Ramify-Timestamp: <unix seconds it was sent>
Verify the signature over the exact bytes received, then refuse a sentAt older than a few minutes
(the SDK's verifyWebhookSignature does both). A non-2xx answer, or none within 10 s, is retried
with exponential backoff (about 1, 2, 4, 8, 16 s; 6 attempts); 'ramify webhook deliveries ID' shows them.`;

/** Register `webhook` on the program. */
export function registerWebhooks(program: Command, env: CliEnv): void {
  const webhook = program.command('webhook').alias('webhooks').description("the team's webhooks: signed POSTs of its events (an admin key)").addHelpText('after', VERIFY_HELP);

  webhook.command('add').argument('<url>', "http:// or https:// URL the events are POSTed to: no user:password@ (the body is signed; put a token in the path or query), a public address unless the daemon runs with --webhook-allow-private")
    .option('--events <types>', `event types to deliver, comma-separated (default all: ${EVENT_TYPES.join(', ')})`, listOf(EVENT_TYPES))
    .option('--name <name>', "a label (default the URL's host)")
    .description('register a webhook; prints its id and its signing secret (shown only now; --json: the webhook with secret)')
    .action(action(env, async (ctx, url: string, opts: { events?: EventType[]; name?: string }) => {
      const made = await Webhook.create(url, { ...ctx.connection, ...(opts.events ? { events: opts.events } : {}), ...(opts.name !== undefined ? { name: opts.name } : {}) });
      ctx.output(made, () => `${made.id}\nsecret: ${made.secret}`);
      if (!ctx.json) ctx.note('ramify: keep the secret: it signs every delivery and is shown only now');
    }));

  webhook.command('list').alias('ls').description("the team's webhooks (never their secrets)")
    .action(action(env, async (ctx) => {
      const webhooks = await Webhook.list(ctx.connection);
      ctx.output({ webhooks }, () => webhooksTable(webhooks));
    }));

  webhook.command('rm').alias('delete').argument('<id>', 'webhook id (whk_...)').description('delete a webhook and its delivery log')
    .action(action(env, async (ctx, id: string) => {
      await Webhook.delete(id, ctx.connection);
      ctx.output({ id, deleted: true }, () => `deleted ${id}`);
    }));

  webhook.command('deliveries').argument('<id>', 'webhook id (whk_...)').description("a webhook's delivery log, newest first: status, attempts, the last answer")
    .option('--limit <n>', 'at most this many (1-1000, default 50)', intIn(1, 1000))
    .action(action(env, async (ctx, id: string, opts: { limit?: number }) => {
      const deliveries = await Webhook.deliveries(id, { ...ctx.connection, ...(opts.limit !== undefined ? { limit: opts.limit } : {}) });
      ctx.output({ deliveries }, () => deliveriesTable(deliveries));
    }));
}
