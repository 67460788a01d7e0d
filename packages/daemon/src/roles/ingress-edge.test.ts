/**
 * The API role's ingress edge (roles/ingress-edge.ts) over a real SQLite store and host registry (core's
 * test world: no runtime involved), in front of a real HTTP and WebSocket receiver on loopback standing for
 * a host's ingress listener: what reaches the host (the original Host, streamed bodies, an upgrade, the
 * reservation of a move, never a client's own placement header), and the edge's own answers, in the host
 * ingress's shape: an invalid Host, an unknown or killed sandbox, a port not exposed, a host lost, a host
 * with no ingress listener, a host not answering. The real proxying to gVisor sandboxes is in
 * real-cluster.test.ts.
 */
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestWorld, type TestWorld } from '@ramify/core/testing';
import { createSandbox, killSandbox, pauseSandbox, PLACEMENT_HEADER, type HostRegistration } from '@ramify/core';
import WebSocket, { WebSocketServer } from 'ws';
import type { RunningIngress } from '../ingress.js';
import { startIngressEdge } from './ingress-edge.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A stand-in for a host's ingress listener: records what it received, echoes bodies, upgrades to an echo WebSocket. */
async function hostIngress(): Promise<{ address: string; seen: Array<{ url: string; headers: IncomingHttpHeaders }> }> {
  const seen: Array<{ url: string; headers: IncomingHttpHeaders }> = [];
  const server: Server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    res.writeHead(200, { 'content-type': 'text/plain' });
    req.pipe(res);
  });
  const wss = new WebSocketServer({ server });
  wss.on('connection', (ws, req) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    ws.on('message', (data) => ws.send(`echo ${data.toString()}`));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    wss.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { address: `127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const registration = (id: string, overrides: Partial<HostRegistration> = {}): HostRegistration => ({
  id, url: `http://${id}:7423`, capacity: { memoryMB: 65536, cpus: 64, slots: 64 }, cachedImageIds: [], pendingUploadIds: [], hostNowMs: Date.now(), leaseMs: 60_000, maxClockSkewMs: 2000, ...overrides,
});

async function setUp(): Promise<{ w: TestWorld; edge: RunningIngress }> {
  const w = await createTestWorld();
  const edge = await startIngressEdge(w.core, { host: '127.0.0.1', port: 0 });
  cleanups.push(async () => {
    await edge.close();
    await w.dispose();
  });
  return { w, edge };
}

/** A request to the edge for `host`. */
function get(edge: RunningIngress, host: string, options: { method?: string; body?: string; headers?: Record<string, string> } = {}): Promise<{ status: number; body: string; json: () => { error: { code: string; message: string } } }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: Number(edge.address.split(':').at(-1)), path: '/x?a=1', method: options.method ?? 'GET', headers: { host, ...options.headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode ?? 0, body, json: () => JSON.parse(body) });
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

const hostOf = (id: string, port = 8000): string => `${port}-${id.toLowerCase()}.localhost`;

test('a port URL reaches its host\'s ingress with the Host kept, the body streamed and a WebSocket upgraded; URLs name the edge', async () => {
  const { w, edge } = await setUp();
  const ingress = await hostIngress();
  await w.core.store.registerHost(registration(w.core.hostId, { ingressAddress: ingress.address }));
  const id = (await createSandbox(w.core, { ports: [{ port: 8000, access: 'public' }] })).id;
  assert.deepEqual(w.core.options.ingress, { domain: 'localhost', protocol: 'http', port: Number(edge.address.split(':').at(-1)) });
  const reply = await get(edge, hostOf(id), { method: 'PUT', body: 'x'.repeat(100_000), headers: { [PLACEMENT_HEADER]: 'rsv_forged' } });
  assert.equal(reply.status, 200);
  assert.equal(reply.body.length, 100_000);
  assert.equal(ingress.seen[0]?.headers.host, hostOf(id));
  assert.equal(ingress.seen[0]?.url, '/x?a=1');
  assert.equal(ingress.seen[0]?.headers[PLACEMENT_HEADER], undefined, 'a client cannot send a placement');
  const ws = new WebSocket(`ws://${edge.address}/ws`, { headers: { host: hostOf(id) } });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  ws.send('hi');
  const echoed = await new Promise<string>((resolve) => ws.once('message', (data) => resolve(data.toString())));
  ws.close();
  assert.equal(echoed, 'echo hi');
  assert.equal(ingress.seen[1]?.headers.host, hostOf(id));
});

test('the edge\'s own answers: invalid Host, unknown, killed, port not exposed, no ingress, host not answering, host lost', async () => {
  const { w, edge } = await setUp();
  await w.core.store.registerHost(registration(w.core.hostId));
  const id = (await createSandbox(w.core, { ports: [{ port: 8000, access: 'public' }] })).id;
  const expect = async (host: string, status: number, code: string, message?: RegExp): Promise<void> => {
    const r = await get(edge, host);
    assert.equal(r.status, status, r.body);
    assert.equal(r.json().error.code, code);
    if (message) assert.match(r.json().error.message, message);
  };
  await expect('localhost', 400, 'INGRESS_HOST_INVALID');
  await expect(hostOf('sbx_01JZZZZZZZZZZZZZZZZZZZZZZZ'), 404, 'SANDBOX_NOT_FOUND');
  await expect(hostOf(id, 9000), 404, 'PORT_NOT_EXPOSED');
  await expect(hostOf(id), 503, 'RUNTIME_UNAVAILABLE', new RegExp(`host '${w.core.hostId}'.*runs no ingress listener`));
  // Registered with an ingress address where nothing listens.
  const closed = await hostIngress();
  await cleanups.pop()!();
  await w.core.store.registerHost(registration(w.core.hostId, { ingressAddress: closed.address }));
  await expect(hostOf(id), 503, 'RUNTIME_UNAVAILABLE', new RegExp(`host '${w.core.hostId}' did not answer at ${closed.address}`));
  const html = await get(edge, hostOf(id), { headers: { accept: 'text/html' } });
  assert.match(html.body, /^<!doctype html>.*RUNTIME_UNAVAILABLE/s, 'a browser gets the page');
  // The host stops heartbeating: its running sandbox is on a lost host.
  await w.core.store.registerHost(registration(w.core.hostId, { leaseMs: 1, ingressAddress: closed.address }));
  await new Promise((resolve) => setTimeout(resolve, 10));
  await expect(hostOf(id), 409, 'HOST_LOST', new RegExp(`host '${w.core.hostId}'`));
  await w.core.store.registerHost(registration(w.core.hostId, { ingressAddress: closed.address }));
  await killSandbox(w.core, id);
  await expect(hostOf(id), 410, 'SANDBOX_KILLED');
});

test('a paused sandbox whose host is lost moves: the edge places it on another host and sends the reservation, released after', async () => {
  const { w, edge } = await setUp();
  const ingress = await hostIngress();
  await w.core.store.registerHost(registration(w.core.hostId));
  const id = (await createSandbox(w.core, { ports: [{ port: 8000, access: 'token' }] })).id;
  await pauseSandbox(w.core, id);
  // Its host lost, its last heartbeat not listing the image (the test world's clock wrote it long before): durable.
  await w.core.store.registerHost(registration(w.core.hostId, { leaseMs: 1 }));
  await w.core.store.registerHost(registration('host-b', { ingressAddress: ingress.address }));
  await new Promise((resolve) => setTimeout(resolve, 10));
  // A page's requests arriving at once share one placement: one host, one reservation.
  const replies = await Promise.all([1, 2, 3, 4, 5].map(() => get(edge, hostOf(id))));
  for (const reply of replies) assert.equal(reply.status, 200, reply.body);
  const reservation = ingress.seen[0]?.headers[PLACEMENT_HEADER] as string;
  assert.match(reservation, /^rsv_/);
  assert.deepEqual(ingress.seen.map((r) => r.headers[PLACEMENT_HEADER]), Array(5).fill(reservation));
  for (let i = 0; i < 50 && (await w.core.store.getReservation(reservation)); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(await w.core.store.getReservation(reservation), null, 'released once the request is done');
});
