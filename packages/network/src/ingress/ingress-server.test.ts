/**
 * The ingress server in-process, against a real HTTP + WebSocket server on loopback reached through the
 * real dialer (a helper process under the ingress uid; needs root). The backend is the interface the
 * server is built on, answering for one sandbox; the daemon's real one is covered by
 * `packages/daemon/src/real-ingress.test.ts` against gVisor.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { RamifyError } from '@ramify/contracts';
import { tokenVerifier } from '@ramify/core';
import { IngressDialer } from './dialer.js';
import { HoldCount, throughIngress } from './ingress-test-support.js';
import { IngressServer, type IngressBackend, type IngressRequestRecord } from './ingress-server.js';

const skip = process.getuid?.() !== 0 ? 'needs root (the dialer runs under its own uid)' : false;
const ID = 'sbx_01J9ZK3V5W6X7Y8Z9A0B1C2D3E';
const TOKEN = `rit_${'A'.repeat(43)}`;
let upstream: Server;
let upstreamPort = 0;
let ingressPort = 0;
let ingress: IngressServer;
const dialer = new IngressDialer();
const seen: Array<Record<string, string | string[] | undefined>> = [];
const logged: IngressRequestRecord[] = [];
const holds = new HoldCount();
let nextEvent: () => void = () => undefined;
let upstreamLeft = false;

const backend: IngressBackend = {
  target: async (sandboxId, port) => {
    if (sandboxId !== ID) throw new RamifyError('SANDBOX_NOT_FOUND', 'no such sandbox');
    // Running (the address comes with the lookup) on one port; through `running` on the other.
    if (port === upstreamPort) return { access: 'token', tokenVerifier: tokenVerifier(TOKEN), slotAddress: '127.0.0.1' };
    if (port === 1) return { access: 'public', tokenVerifier: null, slotAddress: null };
    throw new RamifyError('PORT_NOT_EXPOSED', 'not exposed');
  },
  running: async () => ({ slotAddress: '127.0.0.1', woke: false }),
  listeners: async () => 'none',
  hold: holds.hold,
  log: (entry) => logged.push(entry),
};

function get(port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return throughIngress(ingressPort, `${port}-${ID.toLowerCase()}.localhost:${ingressPort}`, path, headers);
}

before(async () => {
  if (skip) return;
  upstream = createServer((req, res) => {
    seen.push(req.headers);
    if (req.url === '/events') {
      // Server-sent events: one now, the next only once the test has seen the first.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      nextEvent = () => res.end('data: two\n\n');
      return;
    }
    if (req.url === '/forever') {
      res.writeHead(200);
      res.write('start');
      req.socket.once('close', () => (upstreamLeft = true));
      return;
    }
    if (req.url === '/closing') {
      res.writeHead(200, { Connection: 'close', 'X-Custom-Case': 'kept', 'Keep-Alive': 'timeout=1' });
      res.end('closing');
      return;
    }
    res.end(`hello ${req.url}`);
  });
  const wss = new WebSocketServer({ server: upstream });
  wss.on('connection', (ws) => ws.on('message', (m) => ws.send(`echo ${m.toString()}`)));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  upstreamPort = (upstream.address() as AddressInfo).port;
  ingress = new IngressServer({ backend, dialer, domain: 'localhost' });
  ingressPort = (await ingress.listen('127.0.0.1', 0)).port;
});
after(async () => {
  if (skip) return;
  await ingress.close();
  dialer.close();
  upstream.close();
});

test('token port: 401 without, 403 wrong, 400 malformed, 200 with the header (token never forwarded)', { skip }, async () => {
  assert.equal((await get(upstreamPort, '/')).status, 401);
  assert.equal((await get(upstreamPort, '/', { 'x-ramify-access-token': `rit_${'B'.repeat(43)}` })).status, 403);
  assert.equal((await get(upstreamPort, '/', { 'x-ramify-access-token': 'nope' })).status, 400);
  const ok = await get(upstreamPort, '/x', { 'x-ramify-access-token': TOKEN });
  assert.equal(ok.status, 200);
  assert.equal(ok.body, 'hello /x');
  const h = seen[seen.length - 1]!;
  assert.equal(h['x-ramify-access-token'], undefined);
  assert.equal(h['x-forwarded-for'], '127.0.0.1');
  assert.equal(h['x-forwarded-proto'], 'http');
  assert.match(String(h['x-forwarded-host']), /localhost/);
  assert.match((await get(upstreamPort, '/', { accept: 'text/html' })).body, /<html>/);
});

test('query parameter → one redirect setting an HttpOnly cookie, then the cookie works', { skip }, async () => {
  const first = await get(upstreamPort, `/page?a=1&ramify_access_token=${TOKEN}`);
  assert.equal(first.status, 302);
  assert.equal(first.headers.location, '/page?a=1');
  const cookie = String((first.headers['set-cookie'] as string[])[0]).split(';')[0]!;
  assert.match(cookie, /^ramify_access_token=/);
  const second = await get(upstreamPort, '/page?a=1', { cookie });
  assert.equal(second.status, 200);
  assert.equal(seen[seen.length - 1]!.cookie, undefined, 'the access cookie is not forwarded');
});

test('errors: unknown sandbox 404, port not exposed 404, nothing listening 502, bad host 400', { skip }, async () => {
  assert.equal((await get(upstreamPort + 1, '/')).status, 404);
  assert.equal(JSON.parse((await get(upstreamPort + 1, '/')).body).error.code, 'PORT_NOT_EXPOSED');
  const refused = await get(1, '/');
  assert.equal(refused.status, 502);
  assert.equal(JSON.parse(refused.body).error.code, 'UPSTREAM_NOT_LISTENING');
  const bad = await new Promise<number>((resolve) => request({ host: '127.0.0.1', port: ingressPort, path: '/', headers: { host: 'localhost' } }, (res) => resolve(res.statusCode ?? 0)).end());
  assert.equal(bad, 400);
});

test('WebSocket through the ingress, token as a header and as the cookie', { skip }, async () => {
  const url = `ws://127.0.0.1:${ingressPort}/`;
  const host = `${upstreamPort}-${ID.toLowerCase()}.localhost:${ingressPort}`;
  for (const headers of [{ host, 'x-ramify-access-token': TOKEN }, { host, cookie: `ramify_access_token=${TOKEN}` }]) {
    const ws = new WebSocket(url, { headers });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    ws.send('hi');
    const reply = await new Promise<string>((resolve) => ws.once('message', (m) => resolve(m.toString())));
    assert.equal(reply, 'echo hi');
    ws.close();
  }
  const denied = new WebSocket(url, { headers: { host } });
  const status = await new Promise<number>((resolve) => denied.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)).once('error', () => resolve(-1)));
  assert.equal(status, 401);
});

test('each request is held while it runs and logged once done: status, body bytes, path without the token', { skip }, async () => {
  logged.length = 0;
  await get(upstreamPort, '/logged?q=1', { 'x-ramify-access-token': TOKEN });
  await get(upstreamPort, `/x?ramify_access_token=${TOKEN}`);
  await get(upstreamPort, '/nope');
  const ws = new WebSocket(`ws://127.0.0.1:${ingressPort}/ws`, { headers: { host: `${upstreamPort}-${ID.toLowerCase()}.localhost:${ingressPort}`, 'x-ramify-access-token': TOKEN } });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  assert.ok(holds.open >= 1, 'an open WebSocket holds its sandbox');
  ws.close();
  await new Promise((resolve) => ws.once('close', resolve));
  const find = (path: string): IngressRequestRecord | undefined => logged.find((e) => e.path === path);
  for (let i = 0; i < 100 && (!find('/ws') || holds.open > 0); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(holds.open, 0, 'every hold released');
  const [ok, redirect, denied, upgrade] = ['/logged?q=1', '/x', '/nope', '/ws'].map(find);
  assert.deepEqual([ok?.status, ok?.path, ok?.bytes, ok?.method, ok?.client, ok?.sandboxId, ok?.woke], [200, '/logged?q=1', 'hello /logged?q=1'.length, 'GET', '127.0.0.1', ID, false]);
  assert.deepEqual([redirect?.status, redirect?.path], [302, '/x'], 'the token parameter is never logged');
  assert.equal(denied?.status, 401);
  assert.ok((denied?.bytes ?? 0) > 0, 'the error body counts');
  assert.deepEqual([upgrade?.status, upgrade?.path], [101, '/ws']);
  assert.ok(logged.every((e) => e.durationMs >= 0 && !JSON.stringify(e).includes(TOKEN)));
});

test('streams: server-sent events pass one by one; a client that leaves mid-answer closes the upstream request', { skip }, async () => {
  const host = `${upstreamPort}-${ID.toLowerCase()}.localhost:${ingressPort}`;
  const events = await new Promise<string[]>((resolve, reject) => {
    const got: string[] = [];
    request({ host: '127.0.0.1', port: ingressPort, path: '/events', headers: { host, 'x-ramify-access-token': TOKEN } }, (res) => {
      assert.equal(res.headers['content-type'], 'text/event-stream');
      res.on('data', (c: Buffer) => {
        got.push(c.toString());
        if (got.length === 1) nextEvent();
      });
      res.on('end', () => resolve(got));
    }).on('error', reject).end();
  });
  assert.deepEqual(events.join('').split('\n\n').filter(Boolean), ['data: one', 'data: two']);
  assert.equal(events[0], 'data: one\n\n', 'the first event arrived before the second was written');
  upstreamLeft = false;
  await new Promise<void>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: ingressPort, path: '/forever', headers: { host, 'x-ramify-access-token': TOKEN } }, (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.on('error', () => undefined);
    req.end();
  });
  for (let i = 0; i < 100 && !upstreamLeft; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.ok(upstreamLeft, 'the connection serving the abandoned answer was closed');
});

test('the answer\'s hop-by-hop headers stay behind; the client\'s connection is the ingress\'s business', { skip }, async () => {
  const host = `${upstreamPort}-${ID.toLowerCase()}.localhost:${ingressPort}`;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const once = (path: string): Promise<{ raw: string[]; socket: unknown; body: string }> => new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port: ingressPort, path, agent, headers: { host, 'x-ramify-access-token': TOKEN } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ raw: res.rawHeaders, socket: res.socket, body }));
    }).on('error', reject).end();
  });
  const first = await once('/closing');
  assert.equal(first.body, 'closing');
  assert.ok(first.raw.includes('X-Custom-Case'), 'header case kept');
  const connection = first.raw.findIndex((h) => h.toLowerCase() === 'connection');
  assert.equal(first.raw[connection + 1], 'keep-alive', 'the sandbox server\'s Connection: close is not the client\'s');
  const keepAlive = first.raw.findIndex((h) => h.toLowerCase() === 'keep-alive');
  assert.notEqual(first.raw[keepAlive + 1], 'timeout=1', 'nor its Keep-Alive');
  const second = await once('/again');
  assert.equal(second.body, 'hello /again');
  assert.equal(second.socket, first.socket, 'the client kept its connection');
  agent.destroy();
});
