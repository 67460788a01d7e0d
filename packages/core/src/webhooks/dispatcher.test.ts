/**
 * The webhook dispatcher over a real SQLite store and an in-test sender (the transport port; the daemon's
 * sender is covered by webhook-sender.test.ts and real-events.test.ts): retries with backoff until a 2xx, every attempt
 * logged; a destination refused by policy failed at once; the bound on waiting deliveries; a hung webhook holding only its own slots;
 * a claim renewed before an attempt only when it may not outlast it.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../ports/logger.js';
import type { EventRecord } from '../ports/event-store.js';
import type { WebhookRequest, WebhookSender } from '../ports/webhook-sender.js';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { EventHub } from '../events/hub.js';
import { WebhookDispatcher, type WebhookTunables } from './dispatcher.js';
import { verifyWebhookBody } from './signing.js';
import { WebhookDestinationRefused } from './destination.js';
import { eventId } from '../events/cursor.js';

let world: TestWorld;
let dispatcher: WebhookDispatcher | undefined;
beforeEach(async () => {
  world = await createTestWorld();
});
afterEach(async () => {
  await dispatcher?.close();
  dispatcher = undefined;
  await world.dispose();
});

/** A receiver that never answers (the attempt ends only when the dispatcher stops and aborts it). */
const hang = (r: WebhookRequest): Promise<never> => new Promise((_, reject) => r.signal.addEventListener('abort', () => reject(new Error('aborted'))));

const until = async (check: () => boolean | Promise<boolean>, what: string): Promise<void> => {
  for (const end = Date.now() + 10_000; !(await check());) {
    if (Date.now() > end) throw new Error(`timed out until ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

async function setUp(sender: WebhookSender, tunables: Partial<WebhookTunables>, hooks = ['whk_a'], foregroundQuietForMs?: () => number): Promise<{ hub: EventHub; publish: () => Promise<EventRecord> }> {
  for (const id of hooks) {
    await world.store.insertWebhook({ id, teamId: 'default', name: id, url: `http://127.0.0.1:9/${id}`, events: ['sandbox.lifecycle.created'], secret: `whsec_${id}`, createdAt: 0, createdBy: null });
  }
  const hub = new EventHub();
  dispatcher = new WebhookDispatcher({ store: world.store, hub, holder: 'host-test', sender, logger: silentLogger, clock: world.clock, tunables: { retryBaseMs: 5, ...tunables }, ...(foregroundQuietForMs ? { foregroundQuietForMs } : {}) });
  await dispatcher.start();
  const publish = async (): Promise<EventRecord> => {
    const event = await world.store.appendEvent({ type: 'sandbox.lifecycle.created', at: 0, teamId: 'default', sandboxId: 'sbx_x', keyId: null, cause: 'api', data: {} });
    hub.publish(event);
    return event;
  };
  return { hub, publish };
}

describe('webhook dispatcher', () => {
  test('a failing receiver is retried until a 2xx; each attempt is logged; the body is signed', async () => {
    const sent: WebhookRequest[] = [];
    const statuses = [500, 503, 200];
    // Another team's event first: the webhook's event ids are its own team's numbers, no gap for it.
    await world.store.appendEvent({ type: 'sandbox.lifecycle.created', at: 0, teamId: 'acme', sandboxId: 'sbx_y', keyId: null, cause: 'api', data: {} });
    const event = await (await setUp({ post: async (r) => { sent.push(r); return { statusCode: statuses[sent.length - 1] ?? 200 }; } }, {})).publish();
    await until(async () => (await world.store.listDeliveries('whk_a', 10))[0]?.status === 'delivered', 'delivered');
    const [delivery] = await world.store.listDeliveries('whk_a', 10);
    assert.deepEqual([event.teamSeq, delivery?.eventTeamSeq], [1, 1]);
    assert.deepEqual(sent.map((r) => [(JSON.parse(r.body) as { id: string }).id, r.headers['x-ramify-event-id']]), Array(3).fill([eventId('default', 1), eventId('default', 1)]));
    assert.deepEqual(delivery?.attempts.map((a) => a.statusCode), [500, 503, 200]);
    assert.deepEqual(delivery?.attempts.map((a) => a.error), ['the receiver answered 500', 'the receiver answered 503', null]);
    assert.deepEqual(sent.map((r) => (JSON.parse(r.body) as { delivery: { attempt: number } }).delivery.attempt), [1, 2, 3]);
    for (const r of sent) assert.ok(verifyWebhookBody('whsec_whk_a', r.body, r.headers['x-ramify-signature'] as string));
  });

  test('a claim is renewed before an attempt only when it may not outlast the attempt', async () => {
    for (const [tunables, renewals] of [[{}, 0], [{ claimLeaseMs: 0 }, 2]] as const) {
      let renewed = 0;
      const renew = world.store.renewDeliveryClaim.bind(world.store);
      world.store.renewDeliveryClaim = async (id, claim) => {
        renewed += 1;
        return renew(id, claim);
      };
      const statuses = [500, 200];
      let calls = 0;
      await (await setUp({ post: async () => ({ statusCode: statuses[calls++] ?? 200 }) }, tunables, [`whk_${renewals}`])).publish();
      await until(async () => (await world.store.listDeliveries(`whk_${renewals}`, 10))[0]?.status === 'delivered', 'delivered');
      // The default lease (30 s) covers both attempts (10 s each); a lease of 0 covers none.
      assert.deepEqual([calls, renewed], [2, renewals], JSON.stringify(tunables));
      await dispatcher?.close();
      await world.store.deleteWebhook(`whk_${renewals}`);
    }
  });

  test('after maxAttempts a delivery is failed', async () => {
    let calls = 0;
    const { publish } = await setUp({ post: async () => { calls += 1; throw new Error('connection refused'); } }, { maxAttempts: 2 });
    await publish();
    await until(async () => (await world.store.listDeliveries('whk_a', 10))[0]?.status === 'failed', 'failed');
    assert.equal(calls, 2);
    assert.deepEqual((await world.store.listDeliveries('whk_a', 10))[0]?.attempts.map((a) => a.error), ['connection refused', 'connection refused']);
  });

  test('a destination the policy refuses is failed at once, with the reason: no retries', async () => {
    let calls = 0;
    const reason = 'destination 127.0.0.1 is a loopback address: webhooks reach public addresses only; start the daemon with --webhook-allow-private to allow it';
    const { publish } = await setUp({ post: async () => { calls += 1; throw new WebhookDestinationRefused(reason); } }, { maxAttempts: 6 });
    await publish();
    await until(async () => (await world.store.listDeliveries('whk_a', 10))[0]?.status === 'failed', 'failed');
    const [delivery] = await world.store.listDeliveries('whk_a', 10);
    assert.deepEqual([calls, delivery?.attempts.map((a) => a.error), delivery?.nextAttemptAt], [1, [reason], null]);
  });

  test('over maxQueue a delivery is failed at once, not sent', async () => {
    const held = await setUp({ post: hang }, { maxQueue: 2, perWebhookConcurrency: 1 }, ['whk_b']);
    for (let i = 0; i < 3; i++) await held.publish();
    await until(async () => (await world.store.listDeliveries('whk_b', 10)).length === 3, 'three deliveries recorded');
    const statuses = (await world.store.listDeliveries('whk_b', 10)).map((d) => [d.status, d.attempts[0]?.error ?? null]);
    assert.deepEqual(statuses.filter(([s]) => s === 'failed'), [['failed', 'delivery queue full (2 waiting): not sent']]);
    assert.equal(dispatcher?.queueSize(), 2);
  });

  test('a hung webhook holds only its own slots: another webhook is delivered meanwhile', async () => {
    const { publish } = await setUp({ post: (r) => (r.url.endsWith('whk_slow') ? hang(r) : Promise.resolve({ statusCode: 204 })) }, { perWebhookConcurrency: 1, concurrency: 2 }, ['whk_slow', 'whk_fast']);
    for (let i = 0; i < 4; i++) await publish();
    await until(async () => (await world.store.listDeliveries('whk_fast', 10)).every((d) => d.status === 'delivered') && (await world.store.listDeliveries('whk_fast', 10)).length === 4, 'the fast webhook got all four');
    assert.deepEqual((await world.store.listDeliveries('whk_slow', 10)).map((d) => d.status), ['pending', 'pending', 'pending', 'pending']);
  });

  test('a busy foreground holds new deliveries back until it has been quiet for quietMs', async () => {
    let quietForMs = 0;
    const sent: WebhookRequest[] = [];
    const { publish } = await setUp({ post: async (r) => { sent.push(r); return { statusCode: 200 }; } }, { quietMs: 20, maxDeferMs: 600_000 }, ['whk_a'], () => quietForMs);
    await publish();
    // Busy for ten times quietMs: nothing is matched, recorded or sent meanwhile.
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual([sent.length, (await world.store.listDeliveries('whk_a', 10)).length], [0, 0]);
    quietForMs = 20;
    await until(async () => (await world.store.listDeliveries('whk_a', 10))[0]?.status === 'delivered', 'delivered once quiet');
    assert.equal(sent.length, 1);
  });

  test('a foreground that never quiets holds a delivery back at most maxDeferMs', async () => {
    const { publish } = await setUp({ post: async () => ({ statusCode: 200 }) }, { quietMs: 20, maxDeferMs: 50 }, ['whk_a'], () => 0);
    await publish();
    await until(async () => (await world.store.listDeliveries('whk_a', 10))[0]?.status === 'delivered', 'delivered while busy');
  });
});
