/**
 * Two daemons over one Postgres (a throwaway postgresql-15 cluster; core's FAKE runtime and network: the
 * cross-process wiring of events, webhooks and quotas, NOT runtime coverage), each with its own data
 * directory and host id, sharing only the database and the snapshot directory:
 * - a live event stream on daemon A receives the events daemon B stores, with A's own, once each and in
 *   the team's order, across the switch from replay to live;
 * - a webhook receiver on loopback gets each event once while both daemons run dispatchers, and a
 *   delivery left claimed by a process that died is taken over when its claim runs out;
 * - a team quota with room for one admits one of two creates made at once on the two daemons (the other 429).
 * Skipped, saying why, without the Postgres binaries (not on CI, which installs them).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { DirSnapshotStorage, FakeNetwork, FakeRuntime, seedTemplate } from '@ramify/core/testing';
import { postgresForTests } from '@ramify/store/testsuite';
import { until } from './real-test-support.js';
import { serve, type RamifyServer } from './serve.js';

const cluster = await postgresForTests();
const root = await mkdtemp(join(tmpdir(), 'ramify-xproc-'));
after(() => rm(root, { recursive: true, force: true }));

/** A daemon on its own data directory and host id, over `url` and the shared snapshot directory. */
async function daemon(url: string, db: string, name: string): Promise<RamifyServer> {
  const runtime = new FakeRuntime();
  return serve({
    dataDir: join(root, `${db}-${name}`), hostId: `host-${name}`, port: 0, logLevel: 'silent', print: () => undefined, databaseUrl: url,
    overrides: { runtimes: [runtime], network: new FakeNetwork(), connectAgent: runtime.connectAgent, templateBuilder: null, storage: new DirSnapshotStorage(join(root, db, 'snapshots')) },
    coreOptions: { eventPollMs: 5_000, webhooks: { claimLeaseMs: 300, claimSweepMs: 100, retryBaseMs: 50, allowPrivateDestinations: true } },
  });
}

interface Pair {
  a: RamifyServer;
  b: RamifyServer;
  auth: { authorization: string; 'content-type': string };
}

async function pair(db: string): Promise<Pair & { close(): Promise<void> }> {
  const url = await (cluster as Exclude<typeof cluster, { skip: string }>).ensureDatabase(db);
  const a = await daemon(url, db, 'a');
  const b = await daemon(url, db, 'b').catch(async (err: unknown) => {
    await a.close();
    throw err;
  });
  await seedTemplate(a.core.store, a.core.storage, { files: {}, endpoints: [], identities: [] }).catch(async (err: unknown) => {
    await b.close();
    await a.close();
    throw err;
  });
  return { a, b, auth: { authorization: `Bearer ${a.newApiKey}`, 'content-type': 'application/json' }, close: async () => { await b.close(); await a.close(); } };
}

async function call(server: RamifyServer, p: Pair, method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${server.url}${path}`, { method, headers: p.auth, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return { status: res.status, json: (await res.json().catch(() => ({}))) as Record<string, unknown> };
}

describe('two daemons over one Postgres (fake runtime)', { skip: 'skip' in cluster ? cluster.skip : false }, () => {
  if ('skip' in cluster) return;

  test("a live stream on A gets B's events and A's own, in order, once; a webhook gets each once", async () => {
    const p = await pair('xproc_events');
    const received: string[] = [];
    const receiver: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push((JSON.parse(body) as { id: string }).id);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const sockets: WebSocket[] = [];
    const stream = async (query: string, sink: Array<{ id: string }>): Promise<void> => {
      const ws = new WebSocket(`${p.a.url.replace('http', 'ws')}/v1/events/stream${query}`, { headers: { authorization: p.auth.authorization } });
      sockets.push(ws);
      ws.on('message', (data: Buffer) => {
        const frame = JSON.parse(data.toString()) as { type: string; event?: { id: string } };
        if (frame.type === 'event' && frame.event) sink.push(frame.event);
      });
      await new Promise((resolve, reject) => ws.once('message', resolve).once('error', reject)); // The `ready` frame, or the first event.
    };
    try {
      const port = (receiver.address() as { port: number }).port;
      assert.equal((await call(p.a, p, 'POST', '/v1/webhooks', { url: `http://127.0.0.1:${port}/hook` })).status, 201);
      // Events before the stream opens: replayed from the store (the stream starts after the first one).
      const first = await call(p.b, p, 'POST', '/v1/sandboxes', {});
      assert.equal(first.status, 201);
      const firstEventId = ((await call(p.b, p, 'GET', '/v1/events')).json.events as Array<{ id: string }>)[0]?.id as string;
      const frames: Array<{ id: string }> = [];
      const live: Array<{ id: string }> = [];
      await Promise.all([stream(`?after=${firstEventId}`, frames), stream('', live)]);
      // Creates, pauses and kills on both daemons, interleaved, some at once.
      const ids: string[] = [first.json.id as string];
      for (let round = 0; round < 3; round++) {
        const made = await Promise.all([call(p.b, p, 'POST', '/v1/sandboxes', {}), call(p.a, p, 'POST', '/v1/sandboxes', {})]);
        for (const m of made) {
          assert.equal(m.status, 201, JSON.stringify(m.json));
          ids.push(m.json.id as string);
        }
      }
      assert.equal((await call(p.b, p, 'POST', `/v1/sandboxes/${ids[1]}/pause`)).status, 200);
      assert.equal((await call(p.a, p, 'DELETE', `/v1/sandboxes/${ids[2]}`)).status, 204);
      const stored = ((await call(p.a, p, 'GET', '/v1/events?limit=100')).json.events as Array<{ id: string }>).map((e) => e.id);
      assert.equal(stored.length, 1 + 6 + 2, 'seven created, one paused, one killed');
      await until(() => frames.length >= stored.length - 1 && live.length >= stored.length - 1, 'both streams caught up');
      await new Promise((r) => setTimeout(r, 300)); // Nothing more may come.
      assert.deepEqual(frames.map((e) => e.id), stored.slice(1), 'replay then live: every later event once, in order');
      // Live only: from whichever event it saw first (the feed may still have been publishing the first create's), every later one once, in order.
      assert.deepEqual(live.map((e) => e.id), stored.slice(stored.length - live.length), 'live only: every event from its first on, once, in order');
      // Webhooks: each event once, though both daemons run dispatchers and both see every event.
      await until(() => received.length >= stored.length, 'every event delivered');
      await new Promise((r) => setTimeout(r, 500));
      assert.deepEqual([...received].sort(), [...stored].sort(), 'each event delivered exactly once');
    } finally {
      for (const ws of sockets) ws.close();
      receiver.close();
      await p.close();
    }
  });

  test('a pending delivery claimed by a process that died is delivered once by a live one', async () => {
    const p = await pair('xproc_takeover');
    const received: string[] = [];
    const receiver = createServer((req, res) => {
      received.push(String(req.headers['x-ramify-delivery-id']));
      res.writeHead(200).end();
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      const port = (receiver.address() as { port: number }).port;
      const hook = await call(p.a, p, 'POST', '/v1/webhooks', { url: `http://127.0.0.1:${port}/hook`, events: ['sandbox.lifecycle.snapshotted'] });
      const store = p.a.core.store;
      const event = await store.appendEvent({ type: 'sandbox.lifecycle.snapshotted', at: Date.now(), teamId: 'default', sandboxId: null, keyId: null, cause: 'api', data: {} });
      const delivery = { id: 'dlv_dead_1', webhookId: hook.json.id as string, eventSeq: event.seq, eventTeamSeq: event.teamSeq, eventType: event.type, status: 'pending' as const, attempts: [], nextAttemptAt: Date.now(), createdAt: Date.now() };
      assert.equal(await store.insertDelivery(delivery, { holder: 'host-dead', leaseMs: 600 }), true);
      assert.equal(await store.insertDelivery({ ...delivery, id: 'dlv_dead_2' }), false, 'one delivery per (webhook, event)');
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(received, [], 'not taken while the claim holds');
      await until(async () => (await store.listDeliveries(hook.json.id as string, 10))[0]?.status === 'delivered', 'delivered after the claim ran out');
      await new Promise((r) => setTimeout(r, 400));
      assert.deepEqual(received, ['dlv_dead_1']);
    } finally {
      receiver.close();
      await p.close();
    }
  });

  test('a quota with room for one admits one of two creates made at once on the two daemons', async () => {
    const p = await pair('xproc_quota');
    try {
      assert.equal((await call(p.a, p, 'PATCH', '/v1/teams/default', { quota: { maxRunning: 1 } })).status, 200);
      for (let round = 0; round < 3; round++) {
        const results = await Promise.all([call(p.a, p, 'POST', '/v1/sandboxes', {}), call(p.b, p, 'POST', '/v1/sandboxes', {})]);
        const statuses = results.map((r) => r.status).sort();
        assert.deepEqual(statuses, [201, 429], JSON.stringify(results.map((r) => r.json)));
        const made = results.find((r) => r.status === 201)?.json.id as string;
        assert.equal((await call(p.a, p, 'DELETE', `/v1/sandboxes/${made}`)).status, 204);
      }
      assert.deepEqual((await call(p.b, p, 'GET', '/v1/teams/default')).json.usage, { running: 0, memoryMB: 0 });
    } finally {
      await p.close();
    }
  });
});
