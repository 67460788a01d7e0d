/**
 * The ingress on its own thread: a real `IngressThread` (a worker thread running `IngressServer`, its own
 * real dialer helper under the ingress uid: needs root) in front of a real HTTP server on loopback. The
 * backend on the main thread is the interface the thread is built on, recording what it is asked and
 * given: the tests show which requests are served from the pushed routes alone, that a pushed change is in
 * force for the very next request, and that holds and log entries reach the main thread. The daemon's
 * real backend and route feed are covered by `packages/daemon/src/real-ingress*.test.ts` against gVisor.
 */
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Worker } from 'node:worker_threads';
import { RamifyError } from '@ramify/contracts';
import { tokenVerifier, type IngressLogRecord, type IngressRoute } from '@ramify/core';
import type { IngressBackend } from '../ingress-server.js';
import { HoldCount, throughIngress } from '../ingress-test-support.js';
import { IngressThread } from './ingress-thread.js';

const skip = process.getuid?.() !== 0 ? 'needs root (the dialer runs under its own uid)' : false;
const ID = 'sbx_01J9ZK3V5W6X7Y8Z9A0B1C2D3E';
const TOKEN = `rit_${'A'.repeat(43)}`;
let upstream: Server;
let upstreamPort = 0;
let ingressPort = 0;
let thread: IngressThread;
/** What the backend was asked, and the holds it has open. */
const asked: string[] = [];
const logged: IngressLogRecord[] = [];
const holds = new HoldCount();
/** What `target` answers when asked (the route cache could not). */
let answerTarget: () => Promise<Awaited<ReturnType<IngressBackend['target']>>> = async () => {
  throw new RamifyError('SANDBOX_NOT_FOUND', 'no such sandbox');
};

const backend: IngressBackend = {
  target: (sandboxId, port) => {
    asked.push(`target ${sandboxId} ${port}`);
    return answerTarget();
  },
  running: async (sandboxId) => {
    asked.push(`running ${sandboxId}`);
    return { slotAddress: '127.0.0.1', woke: true };
  },
  listeners: async (sandboxId, port) => {
    asked.push(`listeners ${sandboxId} ${port}`);
    return 'loopback-only';
  },
  hold: holds.hold,
  log: (entry) => logged.push(entry),
};

const route = (patch: Partial<IngressRoute> = {}): IngressRoute => ({
  sandboxId: ID, state: 'running', slotAddress: '127.0.0.1', ports: [{ port: upstreamPort, access: 'token' }], tokenVerifier: tokenVerifier(TOKEN), ...patch,
});

function get(path: string, headers: Record<string, string> = { 'x-ramify-access-token': TOKEN }, port = upstreamPort): Promise<{ status: number; body: string }> {
  return throughIngress(ingressPort, `${port}-${ID.toLowerCase()}.localhost:${ingressPort}`, path, headers).then(({ status, body }) => ({ status, body }));
}
const code = (body: string): string => (JSON.parse(body) as { error: { code: string } }).error.code;
async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 250 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.ok(check(), what);
}

before(async () => {
  if (skip) return;
  upstream = createServer((req, res) => {
    if (req.url === '/slow') setTimeout(() => res.end('slow'), 300);
    else res.end(`hello ${req.url}`);
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  upstreamPort = (upstream.address() as AddressInfo).port;
  thread = new IngressThread({ backend, domain: 'localhost', listen: { host: '127.0.0.1', port: 0 }, activityFlushMs: 50, wakeConnectRetryMs: 300 });
  ingressPort = (await thread.ready).port;
});
after(async () => {
  if (skip) return;
  await thread.close();
  upstream.close();
});
beforeEach(() => {
  asked.length = 0;
  logged.length = 0;
  if (!skip) thread.setRoute(route());
});

test('a pushed route serves requests without asking the main thread; the token is checked in the thread', { skip }, async () => {
  assert.deepEqual(await get('/a'), { status: 200, body: 'hello /a' });
  assert.equal((await get('/', {})).status, 401);
  assert.equal(code((await get('/', { 'x-ramify-access-token': `rit_${'B'.repeat(43)}` })).body), 'ACCESS_TOKEN_INVALID');
  assert.equal(code((await get('/', { 'x-ramify-access-token': 'nope' })).body), 'ACCESS_TOKEN_MALFORMED');
  assert.equal(code((await get('/', {}, upstreamPort + 1)).body), 'PORT_NOT_EXPOSED');
  assert.deepEqual(asked, [], 'nothing asked of core');
});

test('a change pushed is in force for the very next request (unexpose, public, kill)', { skip }, async () => {
  thread.setRoute(route({ ports: [] }));
  assert.equal(code((await get('/')).body), 'PORT_NOT_EXPOSED');
  thread.setRoute(route({ ports: [{ port: upstreamPort, access: 'public' }], tokenVerifier: null }));
  assert.equal((await get('/', {})).status, 200, 'public: no token needed');
  thread.setRoute(route({ state: 'killing', slotAddress: null }));
  assert.equal((await get('/')).status, 410);
  thread.deleteRoute(ID);
  answerTarget = async () => {
    throw new RamifyError('SANDBOX_KILLED', 'killed');
  };
  assert.equal((await get('/')).status, 410);
  assert.deepEqual(asked, [`target ${ID} ${upstreamPort}`], 'no route: core is asked');
});

test('what the cache cannot answer goes to the main thread: no verifier yet, a wake, a refused dial', { skip }, async () => {
  thread.setRoute(route({ tokenVerifier: null }));
  answerTarget = async () => ({ access: 'token', tokenVerifier: tokenVerifier(TOKEN), slotAddress: '127.0.0.1' });
  assert.equal((await get('/v')).status, 200);
  assert.deepEqual(asked.splice(0), [`target ${ID} ${upstreamPort}`]);
  thread.setRoute(route({ state: 'paused', slotAddress: null }));
  assert.equal((await get('/woken')).status, 200);
  assert.deepEqual(asked.splice(0), [`running ${ID}`], 'a paused sandbox is woken by core, the request held meanwhile');
  thread.setRoute(route({ ports: [{ port: 1, access: 'public' }] }));
  const refused = await get('/', {}, 1);
  assert.deepEqual([refused.status, code(refused.body)], [502, 'UPSTREAM_LOOPBACK_ONLY']);
  assert.deepEqual(asked, [`listeners ${ID} 1`]);
  await thread.flush();
  assert.equal(logged.find((e) => e.path === '/woken')?.woke, true, 'the log says the request woke it');
});

test('holds reach the main thread while a request runs, releases and log entries by flush', { skip }, async () => {
  const before = holds.total;
  const slow = get('/slow');
  await eventually(() => holds.open === 1, 'the request in flight holds its sandbox on the main thread');
  assert.equal((await slow).body, 'slow');
  await thread.flush();
  assert.equal(holds.open, 0, 'released once done');
  assert.equal(holds.total, before + 1);
  const entry = logged.find((e) => e.path === '/slow');
  assert.deepEqual([entry?.status, entry?.bytes, entry?.sandboxId, entry?.port], [200, 4, ID, upstreamPort]);
  assert.ok((entry?.durationMs ?? 0) >= 250);
});

test('connections into a sandbox are counted and dropped in the thread', { skip }, async () => {
  await get('/pooled');
  assert.deepEqual(await thread.connectionsInto(ID), { open: 1, idle: 1 });
  assert.deepEqual(await thread.dropConnections(ID), { open: 1, idle: 1 });
  assert.equal((await thread.connectionsInto(ID)).idle, 0);
});

test('a thread that dies is started again on its port with its routes; its holds are released', { skip }, async () => {
  const slow = get('/slow').catch(() => null);
  await eventually(() => holds.open === 1, 'held');
  // The worker's handle, private to IngressThread: the test stops it as a crash would.
  await (thread as unknown as { current: { worker: Worker } }).current.worker.terminate();
  await slow;
  assert.equal(holds.open, 0, 'the dead thread\'s holds are released');
  let answered: { status: number; body: string } | null = null;
  for (let i = 0; i < 100 && answered === null; i++) {
    answered = await get('/again').catch(() => null);
    if (answered === null) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.deepEqual(answered, { status: 200, body: 'hello /again' });
  assert.deepEqual(asked, [], 'served from the routes replayed into the new thread');
});

test('a port already taken: ready rejects, nothing is started again', { skip }, async () => {
  const other = new IngressThread({ backend, domain: 'localhost', listen: { host: '127.0.0.1', port: ingressPort } });
  await assert.rejects(other.ready, { code: 'EADDRINUSE' });
  await other.close();
});
