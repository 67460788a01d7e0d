/**
 * The ingress's upstream pool, in-process: a real `IngressServer` over the real dialer (a helper process
 * under the ingress uid; needs root) in front of a real HTTP server on loopback whose connections are
 * counted. Two sandbox ids stand for a parent and its fork (the backend answers both at loopback, so only
 * the pool's keying keeps them apart). Pause/resume arrive as the state changes the daemon passes on;
 * `packages/daemon/src/real-ingress.test.ts` does the same against gVisor.
 */
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { IngressDialer } from './dialer.js';
import { IngressServer, type IngressBackend } from './ingress-server.js';

const skip = process.getuid?.() !== 0 ? 'needs root (the dialer runs under its own uid)' : false;
const PARENT = 'sbx_01J9ZK3V5W6X7Y8Z9A0B1C2D3E';
const FORK = 'sbx_01J9ZK3V5W6X7Y8Z9A0B1C2D3F';
const SLOW = 'sbx_01J9ZK3V5W6X7Y8Z9A0B1C2D3G';

/** The real dialer, counting its dials. */
class CountingDialer extends IngressDialer {
  dials = 0;
  override dial(host: string, port: number): Promise<Socket> {
    this.dials += 1;
    return super.dial(host, port);
  }
}

let upstream: Server;
let upstreamPort = 0;
let ingressPort = 0;
let ingress: IngressServer;
const dialer = new CountingDialer();
/** Upstream connections open now, and how many were ever accepted. */
const openUpstream = new Set<Socket>();
let accepted = 0;
/** `SLOW`'s wake: `running` waits for this gate (the test opens it). */
let slowCalled: () => void = () => undefined;
let slowGate: Promise<void> = Promise.resolve();
let slowReleased: () => void = () => undefined;

const backend: IngressBackend = {
  target: async () => ({ access: 'public', tokenVerifier: null, slotAddress: null }), // `running` decides (SLOW waits there)
  running: async (sandboxId) => {
    if (sandboxId === SLOW) {
      slowCalled();
      await slowGate;
    }
    return { slotAddress: '127.0.0.1', woke: false };
  },
  listeners: async () => 'none',
  hold: (sandboxId) => () => {
    if (sandboxId === SLOW) slowReleased();
  },
  log: () => undefined,
};

function get(sandboxId: string, path = '/'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: ingressPort, path, agent: false, headers: { host: `${upstreamPort}-${sandboxId.toLowerCase()}.localhost:${ingressPort}` } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Poll `check` until it holds (bounded; the thing awaited is an event, not a duration). */
async function eventually(check: () => boolean, what: string): Promise<void> {
  for (const deadline = Date.now() + 5000; !check(); await new Promise((r) => setTimeout(r, 10))) {
    if (Date.now() > deadline) assert.fail(`never: ${what}`);
  }
}

before(async () => {
  if (skip) return;
  upstream = createServer((req, res) => res.end(`served ${req.url} on connection ${(req.socket as Socket & { n?: number }).n}`));
  upstream.on('connection', (socket: Socket & { n?: number }) => {
    accepted += 1;
    socket.n = accepted;
    openUpstream.add(socket);
    socket.once('close', () => openUpstream.delete(socket));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  upstreamPort = (upstream.address() as AddressInfo).port;
  ingress = new IngressServer({ backend, dialer, domain: 'localhost', pool: { maxIdlePerTarget: 2 } });
  ingressPort = (await ingress.listen('127.0.0.1', 0)).port;
});
beforeEach(async () => {
  if (skip) return;
  // Every test starts with no pooled connection.
  for (const id of [PARENT, FORK, SLOW]) ingress.sandboxState(id, 'paused');
  for (const id of [PARENT, FORK, SLOW]) ingress.sandboxState(id, 'running');
  await eventually(() => openUpstream.size === 0, 'the upstream connections are closed');
});
after(async () => {
  if (skip) return;
  await ingress.close();
  dialer.close();
  upstream.close();
});

test('sequential requests share one kept-alive upstream connection, idle in the pool between them', { skip }, async () => {
  const before = dialer.dials;
  const first = await get(PARENT, '/a');
  const second = await get(PARENT, '/b');
  assert.equal(first.status, 200);
  assert.equal(second.status, 200);
  assert.equal(dialer.dials - before, 1);
  assert.equal(first.body.split(' ').pop(), second.body.split(' ').pop());
  assert.deepEqual(ingress.connectionsInto(PARENT), { open: 1, idle: 1 });
});

test('a fork never answers through its parent\'s pooled connection', { skip }, async () => {
  const parent = await get(PARENT);
  const fork = await get(FORK);
  assert.notEqual(parent.body.split(' ').pop(), fork.body.split(' ').pop());
  assert.deepEqual(ingress.connectionsInto(PARENT), { open: 1, idle: 1 });
  assert.deepEqual(ingress.connectionsInto(FORK), { open: 1, idle: 1 });
  assert.equal(openUpstream.size, 2);
});

test('before a checkpoint the pool is drained; until the sandbox runs again nothing is left idle', { skip }, async () => {
  await get(PARENT);
  await get(FORK);
  assert.deepEqual(ingress.dropConnections(PARENT), { open: 1, idle: 1 });
  assert.equal(ingress.connectionsInto(PARENT).open, 0);
  // A request while the checkpoint waits: answered on a connection that closes after it.
  const during = await get(PARENT);
  assert.equal(during.status, 200);
  await eventually(() => ingress.connectionsInto(PARENT).open === 0, 'the one-shot connection closes');
  // The fork's pool is its own: untouched.
  assert.deepEqual(ingress.connectionsInto(FORK), { open: 1, idle: 1 });
  ingress.sandboxState(PARENT, 'running');
  await get(PARENT);
  assert.deepEqual(ingress.connectionsInto(PARENT), { open: 1, idle: 1 });
});

test('after a pause and a resume a request works on a new connection, never the old one', { skip }, async () => {
  const before = await get(PARENT);
  ingress.sandboxState(PARENT, 'pausing');
  assert.equal(ingress.connectionsInto(PARENT).idle, 0);
  await eventually(() => ingress.connectionsInto(PARENT).open === 0, 'the retired idle connection closes');
  ingress.sandboxState(PARENT, 'paused');
  ingress.sandboxState(PARENT, 'running');
  const afterResume = await get(PARENT);
  assert.equal(afterResume.status, 200);
  assert.notEqual(before.body.split(' ').pop(), afterResume.body.split(' ').pop());
});

test('the pool keeps at most maxIdlePerTarget idle connections', { skip }, async () => {
  const answers = await Promise.all([1, 2, 3, 4, 5].map((n) => get(PARENT, `/${n}`)));
  assert.ok(answers.every((a) => a.status === 200));
  await eventually(() => ingress.connectionsInto(PARENT).open <= 2, 'connections beyond the bound close');
  assert.ok(ingress.connectionsInto(PARENT).idle <= 2);
});

test('a request whose client left while the sandbox woke is not sent on (no connection is left open)', { skip }, async () => {
  const called = new Promise<void>((r) => (slowCalled = r));
  const released = new Promise<void>((r) => (slowReleased = r));
  let open: () => void = () => undefined;
  slowGate = new Promise<void>((r) => (open = r));
  const abandoned = request({ host: '127.0.0.1', port: ingressPort, path: '/', agent: false, headers: { host: `${upstreamPort}-${SLOW.toLowerCase()}.localhost:${ingressPort}` } });
  abandoned.on('error', () => undefined);
  abandoned.end();
  await called;
  abandoned.destroy();
  await released;
  const before = dialer.dials;
  open();
  // Dials go through the helper in order: the abandoned request's, had it dialed, came first.
  assert.equal((await get(SLOW)).status, 200);
  assert.equal(dialer.dials - before, 1);
  assert.deepEqual(ingress.connectionsInto(SLOW), { open: 1, idle: 1 });
});
