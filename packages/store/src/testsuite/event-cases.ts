/**
 * Conformance cases: events (order, cursors both ways, pruning), webhooks and their deliveries.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DeliveryRecord, EventRecord, WebhookRecord } from '@ramify/core';
import { team, withStore, type StoreHarness } from './harness.js';

const event = (at: number, overrides: Partial<Omit<EventRecord, 'seq'>> = {}): Omit<EventRecord, 'seq'> => ({
  type: 'sandbox.lifecycle.created', at, teamId: 'default', sandboxId: 'sbx_1', keyId: 'key_1', cause: 'api', data: { n: at, nested: { ok: true } }, ...overrides,
});
const webhook = (id: string, overrides: Partial<WebhookRecord> = {}): WebhookRecord => ({
  id, teamId: 'default', name: id, url: 'http://127.0.0.1:9/hook', events: ['sandbox.lifecycle.created'], secret: 'whsec_x', createdAt: 1, createdBy: null, ...overrides,
});
const delivery = (id: string, eventSeq: number, overrides: Partial<DeliveryRecord> = {}): DeliveryRecord => ({
  id, webhookId: 'wh_1', eventSeq, eventType: 'sandbox.lifecycle.created', status: 'pending', attempts: [], nextAttemptAt: 10, createdAt: 1, ...overrides,
});

export function eventCases(h: StoreHarness): void {
  test('events: increasing seq, read by team, sandbox and type from a cursor either way; prune drops old ones and their deliveries', async () => {
    await withStore(h, 'events', async (store) => {
      const e1 = await store.appendEvent(event(1));
      const e2 = await store.appendEvent(event(2, { type: 'sandbox.lifecycle.paused', sandboxId: 'sbx_2' }));
      const e3 = await store.appendEvent(event(3, { teamId: 'acme' }));
      const e4 = await store.appendEvent(event(4, { sandboxId: null, keyId: null, cause: 'system' }));
      assert.ok(e1.seq < e2.seq && e2.seq < e3.seq && e3.seq < e4.seq);
      assert.deepEqual(e1, { ...event(1), seq: e1.seq });
      assert.deepEqual((await store.listEvents({ teamId: 'default', order: 'desc', limit: 10 })).map((e) => e.seq), [e4.seq, e2.seq, e1.seq]);
      assert.deepEqual((await store.listEvents({ teamId: 'default', order: 'asc', limit: 2 })).map((e) => e.seq), [e1.seq, e2.seq]);
      assert.deepEqual((await store.listEvents({ teamId: 'default', order: 'asc', afterSeq: e1.seq, limit: 10 })).map((e) => e.seq), [e2.seq, e4.seq]);
      assert.deepEqual((await store.listEvents({ teamId: 'default', order: 'desc', afterSeq: e4.seq, limit: 10 })).map((e) => e.seq), [e2.seq, e1.seq]);
      assert.deepEqual((await store.listEvents({ teamId: 'default', order: 'asc', sandboxId: 'sbx_2', limit: 10 })).map((e) => e.seq), [e2.seq]);
      assert.deepEqual((await store.listEvents({ teamId: 'default', order: 'asc', types: ['sandbox.lifecycle.paused'], limit: 10 })).map((e) => e.seq), [e2.seq]);
      assert.deepEqual(await store.listEvents({ teamId: 'acme', order: 'asc', limit: 10 }), [e3]);
      await store.insertWebhook(webhook('wh_1'));
      await store.insertDelivery(delivery('dlv_1', e1.seq));
      await store.insertDelivery(delivery('dlv_2', e4.seq));
      assert.equal(await store.pruneEvents(3), 2);
      assert.deepEqual((await store.listEvents({ teamId: 'default', order: 'asc', limit: 10 })).map((e) => e.seq), [e4.seq]);
      assert.deepEqual((await store.listDeliveries('wh_1', 10)).map((d) => d.id), ['dlv_2'], "a pruned event's delivery goes with it");
      const e5 = await store.appendEvent(event(5));
      assert.ok(e5.seq > e4.seq, 'a seq is never reused');
    });
  });

  test('webhooks: per team, an unknown team refused, deliveries updated, pending ones oldest first, gone with their webhook', async () => {
    await withStore(h, 'webhooks', async (store) => {
      await assert.rejects(store.insertWebhook(webhook('wh_x', { teamId: 'nope' })), { code: 'TEAM_NOT_FOUND' });
      await store.insertTeam(team('acme'));
      await store.insertWebhook(webhook('wh_1', { events: ['sandbox.lifecycle.created', 'sandbox.lifecycle.killed'], createdBy: 'key_1' }));
      await store.insertWebhook(webhook('wh_2', { teamId: 'acme', createdAt: 2 }));
      await assert.rejects(store.insertWebhook(webhook('wh_1')), { code: 'CONFLICT' });
      assert.deepEqual(await store.getWebhook('wh_1'), webhook('wh_1', { events: ['sandbox.lifecycle.created', 'sandbox.lifecycle.killed'], createdBy: 'key_1' }));
      assert.deepEqual((await store.listWebhooks()).map((w) => w.id), ['wh_1', 'wh_2']);
      assert.deepEqual((await store.listWebhooks('acme')).map((w) => w.id), ['wh_2']);
      await store.insertDelivery(delivery('dlv_a', 1, { nextAttemptAt: 30 }));
      await store.insertDelivery(delivery('dlv_b', 2, { nextAttemptAt: 20 }));
      await store.insertDelivery(delivery('dlv_c', 3, { webhookId: 'wh_2', status: 'delivered', nextAttemptAt: null }));
      await assert.rejects(store.insertDelivery(delivery('dlv_d', 4, { webhookId: 'wh_gone' })));
      assert.deepEqual((await store.pendingDeliveries(10)).map((d) => d.id), ['dlv_b', 'dlv_a']);
      const attempts = [{ at: 5, statusCode: 500, error: 'HTTP 500', durationMs: 3 }];
      await store.updateDelivery({ id: 'dlv_b', status: 'failed', attempts, nextAttemptAt: null });
      assert.deepEqual((await store.listDeliveries('wh_1', 10)).map((d) => [d.id, d.status]), [['dlv_b', 'failed'], ['dlv_a', 'pending']]);
      assert.deepEqual((await store.listDeliveries('wh_1', 10))[0]?.attempts, attempts);
      assert.deepEqual((await store.pendingDeliveries(10)).map((d) => d.id), ['dlv_a']);
      assert.equal(await store.deleteWebhook('wh_1'), true);
      assert.equal(await store.deleteWebhook('wh_1'), false);
      assert.deepEqual(await store.listDeliveries('wh_1', 10), []);
      assert.equal(await store.getWebhook('wh_1'), null);
    });
  });
}
