/**
 * Ingress end to end (issue 10, items 1-5) through a REAL daemon (`serve()` in-process, prefix `rmin`,
 * egress enforcement on, the ingress on a free loopback port, domain `localhost`) and REAL gVisor
 * sandboxes running Python servers: token and public access, the query-parameter → cookie exchange,
 * WebSocket echo (token as header and as cookie), 200 MB each way with exact bytes and bounded memory,
 * the "bind 0.0.0.0" 502, forks answering with their own content at their own URLs, wake on request of a
 * paused sandbox, ports surviving a daemon restart, bad input, and the firewall: neither the host (any
 * process but the ingress dialer) nor another sandbox reaches a sandbox's port at its slot address.
 * Skipped, with the reason, when not root, without runsc/nft, or without the prepared rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { WebSocket } from 'ws';
import { layoutForPrefix, slotAddresses } from '@ramify/network';
import { serve, type RamifyServer } from './serve.js';
import { WS_SERVER_PY } from './real-ingress-servers.js';
import { ingressTestKit } from './real-ingress-support.js';
import { realRuntimeSkip, registerRootfsTemplate, stopRealDaemon, until } from './real-test-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc', 'nft']);

const PREFIX = 'rmin';
let dataDir: string;
let server: RamifyServer | undefined;
let key = '';
let ingressPort = 0;

const start = async (port = 0): Promise<RamifyServer> =>
  serve({
    dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: PREFIX },
    coreOptions: { quietNetworkTimeoutMs: 2_000 }, ingress: { host: '127.0.0.1', port },
  });

const { call, sh, background, put, ingress, serving, urlOf } = ingressTestKit(() => (server ? { url: server.url, key, ingressPort } : undefined));

describe('ingress: port URLs into real gVisor sandboxes', { skip, timeout: 1_800_000 }, () => {
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'ramify-ingress-'));
    server = await start();
    key = server.newApiKey ?? '';
    ingressPort = Number(server.ingress?.address.split(':').pop());
    await registerRootfsTemplate(server.core, rootfs as string, { templateId: 'tpl_rmin', snapshotId: 'snap_rmin_base' });
  });
  after(async () => {
    if (server) await stopRealDaemon(server, call);
    await rm(dataDir, { recursive: true, force: true });
  });

  test('a Python http.server answers through its URL with the token, not without or with a wrong one; public needs none', async () => {
    const id = await serving({ ports: [8000, { port: 8001, access: 'public' }] }, 8000);
    const info = (await call('GET', `/v1/sandboxes/${id}`)).json;
    assert.deepEqual(info.ingress, { domain: 'localhost', port: ingressPort, protocol: 'http' });
    const { url, host, token } = await urlOf(id, 8000);
    assert.equal(host, `8000-${id.toLowerCase()}.localhost:${ingressPort}`);
    assert.equal(url, `http://${host}/`);
    assert.ok(token);
    assert.equal((await ingress(host)).status, 401);
    assert.equal(JSON.parse((await ingress(host)).body).error.code, 'ACCESS_TOKEN_REQUIRED');
    assert.match((await ingress(host, '/', { headers: { accept: 'text/html' } })).body, /<html>/);
    assert.equal((await ingress(host, '/', { headers: { 'x-ramify-access-token': `rit_${'x'.repeat(43)}` } })).status, 403);
    assert.equal((await ingress(host, '/', { headers: { 'x-ramify-access-token': 'not-a-token' } })).status, 400);
    const ok = await ingress(host.toUpperCase(), '/index.html', { headers: { 'x-ramify-access-token': token } });
    assert.equal(ok.status, 200, ok.body);
    assert.equal(ok.body, 'hello from the sandbox\n');
    // Browser flow: the query parameter once, then the cookie.
    const first = await ingress(host, `/index.html?ramify_access_token=${token}`);
    assert.equal(first.status, 302);
    assert.equal(first.headers.location, '/index.html');
    const cookie = String((first.headers['set-cookie'] as string[])[0]).split(';')[0] as string;
    assert.equal((await ingress(host, '/index.html', { headers: { cookie } })).body, 'hello from the sandbox\n');
    const log = await sh(id, 'cat /root/access.log');
    assert.ok(!log.includes(token), 'the sandbox server never sees the token');
    assert.match(log, /x-forwarded-for': '127\.0\.0\.1'/i);
    // Public port: the same server on 8001 (started now), no token.
    await background(id, 'python3 /root/srv.py 8001');
    const publicHost = (await urlOf(id, 8001)).host;
    assert.equal((await urlOf(id, 8001)).token, undefined);
    await until(async () => (await ingress(publicHost, '/index.html')).status === 200, 'the public port answers');
  });

  test('a WebSocket echo server through the URL, token as header and as cookie', async () => {
    const id = await serving({ ports: [9000] }, 8000);
    await put(id, '/root/ws.py', WS_SERVER_PY);
    await background(id, 'python3 /root/ws.py 9000');
    const { host, token } = await urlOf(id, 9000);
    const ws = async (headers: Record<string, string>): Promise<string> => {
      const socket = new WebSocket(`ws://127.0.0.1:${ingressPort}/`, { headers: { host, ...headers } });
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      socket.send('ping');
      const reply = await new Promise<string>((resolve) => socket.once('message', (m) => resolve(m.toString())));
      socket.close();
      return reply;
    };
    await until(async () => (await ws({ 'x-ramify-access-token': token as string }).catch(() => '')) === 'echo ping', 'the echo server answers through the ingress');
    assert.equal(await ws({ cookie: `ramify_access_token=${token}` }), 'echo ping');
    const denied = new WebSocket(`ws://127.0.0.1:${ingressPort}/`, { headers: { host } });
    assert.equal(await new Promise<number>((resolve) => denied.once('unexpected-response', (_q, res) => resolve(res.statusCode ?? 0)).once('error', () => resolve(-1))), 401);
  });

  // Streaming through the proxy with bounded memory: 200 MB each way (~9 s), so only on a full run; every
  // run streams WebSocket frames and HTTP bodies through the same proxy in the other cases.
  test('200 MB up and down through the URL keep exact bytes, daemon memory bounded', { skip: process.env.RAMIFY_TEST_FULL === '1' ? false : 'RAMIFY_TEST_FULL=1 only (npm run test:full): 200 MB each way' }, async () => {
    const id = await serving({ ports: [{ port: 8000, access: 'public' }], memoryMB: 2048 }, 8000);
    const { host } = await urlOf(id, 8000);
    const size = 200 << 20;
    const chunk = randomBytes(1 << 20);
    const sent = createHash('sha256');
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    try {
      const uploaded = await new Promise<string>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: ingressPort, path: '/big.bin', method: 'PUT', headers: { host, 'content-length': size } }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve(body));
        });
        req.on('error', reject);
        Readable.from((function* () {
          for (let i = 0; i < 200; i++) {
            const part = Buffer.from(chunk.map((b) => b ^ i));
            sent.update(part);
            yield part;
          }
        })()).pipe(req);
      });
      const digest = sent.digest('hex');
      assert.equal(uploaded, digest, 'the server got exactly the bytes sent');
      const received = createHash('sha256');
      let bytes = 0;
      await new Promise<void>((resolve, reject) => {
        request({ host: '127.0.0.1', port: ingressPort, path: '/big.bin', headers: { host } }, (res) => {
          res.on('data', (c: Buffer) => {
            bytes += c.length;
            received.update(c);
          });
          res.on('end', () => resolve());
          res.on('error', reject);
        }).on('error', reject).end();
      });
      assert.equal(bytes, size);
      assert.equal(received.digest('hex'), digest, 'the download is the same bytes');
    } finally {
      clearInterval(sampler);
    }
    const grewMiB = (peak - baseline) / (1 << 20);
    assert.ok(grewMiB < 120, `daemon memory grew ${grewMiB.toFixed(0)} MiB moving 2 x 200 MiB`);
    await call('DELETE', `/v1/sandboxes/${id}`);
  });

  test('a server on 127.0.0.1 only gets the "bind 0.0.0.0" 502; nothing listening gets its own 502', async () => {
    const id = await serving({ ports: [8000, 8002] }, 8000, '127.0.0.1');
    const { host, token } = await urlOf(id, 8000);
    const r = await ingress(host, '/', { headers: { 'x-ramify-access-token': token as string } });
    assert.equal(r.status, 502, r.body);
    assert.equal(JSON.parse(r.body).error.code, 'UPSTREAM_LOOPBACK_ONLY');
    assert.match(JSON.parse(r.body).error.message, /bind 0\.0\.0\.0/);
    const none = await ingress((await urlOf(id, 8002)).host, '/', { headers: { 'x-ramify-access-token': token as string } });
    assert.equal(none.status, 502);
    assert.equal(JSON.parse(none.body).error.code, 'UPSTREAM_NOT_LISTENING');
  });

  test('three forks each answer with their own content at their own URL', async () => {
    const parent = await serving({ ports: [8000] }, 8000);
    const forks = (await call('POST', `/v1/sandboxes/${parent}/fork`, { count: 3 })).json.sandboxes.map((s: { id: string }) => s.id) as string[];
    assert.equal(forks.length, 3);
    for (const f of forks) await put(f, '/root/www/who.txt', `I am ${f}`);
    const tokens = new Set<string>();
    for (const f of forks) {
      const { host, token } = await urlOf(f, 8000);
      tokens.add(token as string);
      const r = await ingress(host, '/who.txt', { headers: { 'x-ramify-access-token': token as string } });
      assert.equal(r.body, `I am ${f}`);
    }
    assert.equal(tokens.size, 3, 'each fork has its own token');
    const [a, b] = forks as [string, string];
    const other = await ingress((await urlOf(a, 8000)).host, '/who.txt', { headers: { 'x-ramify-access-token': (await urlOf(b, 8000)).token as string } });
    assert.equal(other.status, 403, "a sibling's token does not open a fork");
  });

  test('pooled upstream connections: an idle one holds neither a fork nor a pause up, and a fork never answers through its parent\'s', async () => {
    const parent = await serving({ ports: [8000] }, 8000, '0.0.0.0', { 'who.txt': 'parent' });
    const { host, token } = await urlOf(parent, 8000);
    const headers = { 'x-ramify-access-token': token as string };
    // Leaves a kept-alive connection idle in the ingress's pool: an established endpoint in the sandbox.
    assert.equal((await ingress(host, '/who.txt', { headers })).body, 'parent');
    // Both checkpoint the parent: each would be refused (CHECKPOINT_BLOCKED) were the pool not drained first.
    const forked = await call('POST', `/v1/sandboxes/${parent}/fork`, { count: 1 });
    const child = (forked.json.sandboxes?.[0]?.id ?? assert.fail(JSON.stringify(forked.json))) as string;
    await put(child, '/root/www/who.txt', 'child');
    const childUrl = await urlOf(child, 8000);
    assert.equal((await ingress(childUrl.host, '/who.txt', { headers: { 'x-ramify-access-token': childUrl.token as string } })).body, 'child');
    assert.equal((await ingress(host, '/who.txt', { headers })).body, 'parent');
    const paused = await call('POST', `/v1/sandboxes/${parent}/pause`);
    assert.equal(paused.json.state, 'paused', JSON.stringify(paused.json));
    // After the pause: woken, on a new connection, twice (the second on the connection the first left).
    assert.equal((await ingress(host, '/who.txt', { headers })).body, 'parent');
    assert.equal((await ingress(host, '/who.txt', { headers })).body, 'parent');
    assert.equal((await ingress(childUrl.host, '/who.txt', { headers: { 'x-ramify-access-token': childUrl.token as string } })).body, 'child');
    for (const id of [parent, child]) await call('DELETE', `/v1/sandboxes/${id}`);
  });

  test('a paused sandbox answers its first request through auto-resume', async () => {
    const id = await serving({ ports: [8000] }, 8000);
    const { host, token } = await urlOf(id, 8000);
    const paused = await call('POST', `/v1/sandboxes/${id}/pause`);
    assert.equal(paused.json.state, 'paused', JSON.stringify(paused.json));
    const [r1, r2] = await Promise.all([1, 2].map(() => ingress(host, '/index.html', { headers: { 'x-ramify-access-token': token as string } })));
    assert.equal(r1?.body, 'hello from the sandbox\n');
    assert.equal(r2?.body, 'hello from the sandbox\n');
    assert.equal((await call('GET', `/v1/sandboxes/${id}`)).json.state, 'running');
    await call('PUT', `/v1/sandboxes/${id}/auto-resume`, { autoResume: false });
    await until(async () => (await call('POST', `/v1/sandboxes/${id}/pause`)).json.state === 'paused', 'the sandbox pauses again');
    const asleep = await ingress(host, '/index.html', { headers: { 'x-ramify-access-token': token as string } });
    assert.equal(asleep.status, 503);
    assert.equal(JSON.parse(asleep.body).error.code, 'SANDBOX_PAUSED');
  });

  test('an open WebSocket through the ingress does not block a pause: the ingress closes it, the next request wakes the sandbox', async () => {
    const id = await serving({ ports: [8000, 9000] }, 8000);
    await put(id, '/root/ws.py', WS_SERVER_PY);
    await background(id, 'python3 /root/ws.py 9000');
    const ws = await urlOf(id, 9000);
    const open = async (): Promise<WebSocket> => {
      const socket = new WebSocket(`ws://127.0.0.1:${ingressPort}/`, { headers: { host: ws.host, 'x-ramify-access-token': ws.token as string } });
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      return socket;
    };
    let opened: WebSocket | undefined;
    await until(async () => Boolean((opened = await open().catch(() => undefined))), 'the echo server answers through the ingress');
    const socket = opened ?? assert.fail('no WebSocket');
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.send('ping');
    assert.equal(await new Promise<string>((resolve) => socket.once('message', (m) => resolve(m.toString()))), 'echo ping');
    // Without the ingress closing its own connection, gVisor's checkpoint would refuse (CHECKPOINT_BLOCKED).
    const paused = await call('POST', `/v1/sandboxes/${id}/pause`);
    assert.equal(paused.status, 200, JSON.stringify(paused.json));
    assert.equal(paused.json.state, 'paused');
    await closed;
    const { host, token } = await urlOf(id, 8000);
    const woken = await ingress(host, '/index.html', { headers: { 'x-ramify-access-token': token as string } });
    assert.equal(woken.body, 'hello from the sandbox\n');
    assert.equal((await call('GET', `/v1/sandboxes/${id}`)).json.state, 'running');
  });

  test('bad input: a clear error each, nothing stored changes', async () => {
    const id = await serving({ ports: [8000] }, 8000);
    const before = (await call('GET', `/v1/sandboxes/${id}/ports`)).json;
    for (const port of ['0', '70000', 'abc']) {
      const r = await call('PUT', `/v1/sandboxes/${id}/ports/${port}`, {});
      assert.equal(r.status, 400, `${port}: ${JSON.stringify(r.json)}`);
      assert.equal(r.json.error.code, 'VALIDATION_FAILED');
    }
    assert.equal((await call('PUT', `/v1/sandboxes/${id}/ports/9000`, { access: 'everyone' })).status, 400);
    assert.equal((await call('POST', '/v1/sandboxes', { ports: [0] })).status, 400);
    assert.equal((await call('POST', '/v1/sandboxes', { ports: ['8080'] })).status, 400);
    assert.deepEqual((await call('GET', `/v1/sandboxes/${id}/ports`)).json, before);
    const { host, token } = await urlOf(id, 8000);
    assert.equal((await ingress(host, '/', { headers: { 'x-ramify-access-token': `${token}x` } })).status, 400, 'malformed token');
    assert.equal((await ingress(`8000-sbx_01j9zk3v5w6x7y8z9a0b1c2d3e.localhost:${ingressPort}`)).status, 404, 'unknown sandbox');
    assert.equal((await ingress(`localhost:${ingressPort}`)).status, 400, 'no sandbox part');
    assert.equal((await ingress(`8000.localhost:${ingressPort}`)).status, 400, 'no sandbox part');
    await call('DELETE', `/v1/sandboxes/${id}`);
    const killed = await call('PUT', `/v1/sandboxes/${id}/ports/9000`, {});
    assert.equal(killed.status, 404, JSON.stringify(killed.json));
    assert.equal((await ingress(host)).status, 410, 'killed');
  });

  test('nothing but the ingress reaches a sandbox port: not the host at the slot address, not another sandbox', async () => {
    const id = await serving({ ports: [{ port: 8000, access: 'public' }] }, 8000);
    const neighbour = await serving({}, 8000);
    const slot = (await server!.core.store.getSandbox(id))?.slot as number;
    const { slotAddress } = slotAddresses(layoutForPrefix(PREFIX), slot);
    // From the host: the output hook rejects the SYN of any socket not the dialer's (admin-prohibited), and connect fails at once.
    const code = await new Promise<string>((resolve) => {
      const s = connect({ host: slotAddress, port: 8000 });
      s.once('connect', () => {
        s.destroy();
        resolve('connected');
      });
      s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });
    assert.ok(['EHOSTUNREACH', 'EACCES', 'EPERM'].includes(code), `the host reached ${slotAddress}:8000 (${code})`);
    // From the neighbour sandbox: its packets to a slot address are dropped by the egress table.
    const out = await sh(neighbour, `python3 -c "import socket; s=socket.socket(); s.settimeout(3); print(s.connect_ex(('${slotAddress}', 8000)))"`);
    assert.notEqual(out.trim(), '0', 'the neighbour connected');
    assert.equal((await ingress((await urlOf(id, 8000)).host, '/index.html')).status, 200, 'the ingress still does');
    const log = await sh(id, 'cat /root/access.log || true');
    assert.equal(log.split('\n').filter((l) => l.startsWith('10.')).filter((l) => !l.includes('GET /index.html')).length, 0, `only the ingress reached the server: ${log}`);
  });

  test('exposed ports and their access survive a daemon restart', async () => {
    const id = await serving({ ports: [8000, { port: 8001, access: 'public' }] }, 8000);
    const { host, token } = await urlOf(id, 8000);
    await server!.close();
    server = await start(ingressPort);
    assert.deepEqual((await call('GET', `/v1/sandboxes/${id}`)).json.ports, [{ port: 8000, access: 'token' }, { port: 8001, access: 'public' }]);
    assert.equal((await urlOf(id, 8000)).token, token, 'same token');
    assert.equal((await ingress(host, '/index.html')).status, 401);
    const r = await ingress(host, '/index.html', { headers: { 'x-ramify-access-token': token as string } });
    assert.equal(r.status, 200, r.body);
  });
});
