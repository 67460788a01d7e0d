/**
 * The ingress thread's batching of holds and log entries (pure logic; the messages it posts are collected
 * as the main thread would get them): a hold on a sandbox the main thread sees idle goes out in the same
 * turn, the rest waits for the batch, and opens always travel with or before their releases.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IngressLogRecord } from '@ramify/core';
import { ActivityBatch } from './activity-batch.js';
import type { ActivityBatchMessage } from './protocol.js';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const entry = (path: string): IngressLogRecord => ({ sandboxId: 'sbx_A', at: 1, client: '127.0.0.1', method: 'GET', path, port: 8000, status: 200, bytes: 1, durationMs: 1, woke: false });

test('a hold on an idle sandbox is sent in the same turn; a second one and the release wait for the batch', async () => {
  const sent: ActivityBatchMessage[] = [];
  const batch = new ActivityBatch((m) => sent.push(m), 60_000);
  const first = batch.hold('sbx_A');
  await turn();
  assert.deepEqual(sent.map((m) => [m.opened, m.released]), [[[['sbx_A', 1]], []]], 'sent at once');
  const second = batch.hold('sbx_A');
  first();
  first();
  second();
  batch.log(entry('/a'));
  await turn();
  assert.equal(sent.length, 1, 'the main thread already sees the sandbox held: nothing more yet');
  batch.flush();
  assert.deepEqual([sent[1]?.opened, sent[1]?.released, sent[1]?.logs.map((e) => e.path)], [[['sbx_A', 1]], [['sbx_A', 2]], ['/a']], 'a release counts once');
  batch.hold('sbx_A');
  await turn();
  assert.equal(sent.length, 3, 'all released: the next hold is sent at once again');
});

test('releases and log entries reach the main thread within flushMs without a flush', async () => {
  const sent: ActivityBatchMessage[] = [];
  const batch = new ActivityBatch((m) => sent.push(m), 30);
  batch.hold('sbx_B')();
  batch.log(entry('/b'));
  await turn();
  for (let i = 0; i < 50 && sent.flatMap((m) => m.logs).length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  const all = { opened: sent.flatMap((m) => m.opened), released: sent.flatMap((m) => m.released), logs: sent.flatMap((m) => m.logs) };
  assert.deepEqual(all, { opened: [['sbx_B', 1]], released: [['sbx_B', 1]], logs: [entry('/b')] });
  const before = sent.length;
  batch.flush();
  assert.equal(sent.length, before, 'nothing pending: flush posts nothing');
});
