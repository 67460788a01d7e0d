/**
 * Ingress, second part (issue 10 items 6-7 and the gaps of the first part), through a REAL daemon
 * (`serve()` in-process, prefix `rmil`) and REAL gVisor sandboxes, with the ingress serving HTTPS under a
 * self-signed wildcard certificate for `*.ramify.test` that the test makes with openssl: the token over
 * TLS (a `Secure` cookie); an idle sandbox with `autoPause` pauses and a busy one (a CPU loop in the
 * background) does not, the CPU figures read from the runtime's cgroup printed; a request wakes the idle
 * one and the ingress log shows it (newest first, the wake counted); the ingress firewall table deleted
 * from outside is re-installed and the host is refused again. Skipped, with the reason, when not root,
 * without runsc/nft/openssl, or without the prepared rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ingressFirewallInstalled, layoutForPrefix, slotAddresses } from '@ramify/network';
import type { GvisorRuntime } from '@ramify/runtime-gvisor';
import { serve, type RamifyServer } from './serve.js';
import { HTTP_SERVER_PY } from './real-ingress-servers.js';
import { apiCaller, realRuntimeSkip, registerRootfsTemplate, stopRealDaemon, until } from './real-test-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc', 'nft', 'openssl']);

const PREFIX = 'rmil';
const DOMAIN = 'ramify.test';
const IDLE_MS = 10_000;
let dataDir: string;
let server: RamifyServer | undefined;
let key = '';
let ingressPort = 0;
let ca: Buffer;

const call = apiCaller(() => server?.url, () => key);
const sh = async (id: string, cmd: string): Promise<string> => {
  const r = await call('POST', `/v1/sandboxes/${id}/commands`, { cmd, timeoutMs: 300_000 });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.equal(r.json.exitCode, 0, `${cmd}: ${r.json.stderr}`);
  return r.json.stdout as string;
};
const put = async (id: string, path: string, content: string): Promise<void> => {
  const res = await fetch(`${server?.url}/v1/sandboxes/${id}/files?path=${encodeURIComponent(path)}`, { method: 'PUT', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' }, body: content });
  assert.equal(res.status, 200, await res.text());
};
/** The sandbox's state read in-process (an API call would count as use of it). */
const stateOf = async (id: string): Promise<string | undefined> => (await server?.core.store.getSandbox(id))?.state;

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** An HTTPS request to the ingress for `host`, verifying the certificate against the test's CA. */
function ingress(host: string, path = '/', headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: ingressPort, path, servername: host.split(':')[0], ca, headers: { host, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A sandbox serving /root/www on 8000 (token access), with `body` as the API takes it. */
async function serving(body: Record<string, unknown>): Promise<string> {
  const r = await call('POST', '/v1/sandboxes', { timeoutMs: 1_800_000, ports: [8000], ...body });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  const id = r.json.id as string;
  await put(id, '/root/srv.py', HTTP_SERVER_PY);
  await put(id, '/root/www/index.html', 'hello over tls\n');
  assert.equal((await call('POST', `/v1/sandboxes/${id}/commands`, { cmd: 'python3 /root/srv.py 8000', background: true })).status, 200);
  await until(async () => (await sh(id, `python3 -c "import socket; s=socket.socket(); s.settimeout(1); print(s.connect_ex(('127.0.0.1', 8000)))"`)).trim() === '0', `the server in ${id} listens`);
  return id;
}

async function urlOf(id: string): Promise<{ url: string; host: string; token: string }> {
  const r = await call('GET', `/v1/sandboxes/${id}/ports/8000/url`);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return r.json;
}

describe('ingress over TLS, idle auto-pause, the ingress log, the ingress table watchdog (real gVisor)', { skip, timeout: 1_800_000 }, () => {
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'ramify-ingress-idle-'));
    const cert = join(dataDir, 'cert.pem');
    const keyFile = join(dataDir, 'key.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', cert, '-days', '2', '-subj', `/CN=*.${DOMAIN}`, '-addext', `subjectAltName=DNS:*.${DOMAIN}`], { stdio: 'ignore' });
    ca = await readFile(cert);
    server = await serve({
      dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: PREFIX },
      coreOptions: { quietNetworkTimeoutMs: 2_000 },
      ingress: { host: '127.0.0.1', port: 0, domain: DOMAIN, tls: { certFile: cert, keyFile } },
    });
    key = server.newApiKey ?? '';
    ingressPort = Number(server.ingress?.address.split(':').pop());
    await registerRootfsTemplate(server.core, rootfs as string, { templateId: 'tpl_rmil', snapshotId: 'snap_rmil_base' });
  });
  after(async () => {
    if (server) await stopRealDaemon(server, call);
    await rm(dataDir, { recursive: true, force: true });
  });

  test('HTTPS with a self-signed wildcard certificate: URLs say https, 401 without the token, a Secure cookie for the query parameter', async () => {
    const id = await serving({});
    const { url, host, token } = await urlOf(id);
    assert.equal(url, `https://8000-${id.toLowerCase()}.${DOMAIN}:${ingressPort}/`);
    assert.equal((await ingress(host, '/index.html')).status, 401, 'no token, no entry');
    assert.equal((await ingress(host, '/index.html', { 'x-ramify-access-token': `rit_${'x'.repeat(43)}` })).status, 403);
    const first = await ingress(host, `/index.html?ramify_access_token=${token}`);
    assert.equal(first.status, 302);
    const setCookie = String((first.headers['set-cookie'] as string[])[0]);
    assert.match(setCookie, /; Secure/i);
    assert.match(setCookie, /HttpOnly/i);
    const page = await ingress(host, '/index.html', { cookie: setCookie.split(';')[0] as string });
    assert.equal(page.status, 200, page.body);
    assert.equal(page.body, 'hello over tls\n');
    await assert.rejects(fetch(`http://127.0.0.1:${ingressPort}/`, { headers: { host } }), 'plain HTTP to the TLS listener gets no answer');
    await call('DELETE', `/v1/sandboxes/${id}`);
  });

  test('an idle sandbox with autoPause pauses; a busy one does not; a request wakes it and the ingress log shows it', async () => {
    const idle = await serving({ autoPause: { idleMs: IDLE_MS } });
    const busy = await serving({ autoPause: { idleMs: IDLE_MS } });
    assert.equal((await call('POST', `/v1/sandboxes/${busy}/commands`, { cmd: 'sh -c "while :; do :; done"', background: true })).status, 200);
    const busySince = Date.now();
    const { host, token } = await urlOf(idle);
    const runtime = server!.core.runtimes[0] as GvisorRuntime;
    const cpu = async (id: string): Promise<number> => (await runtime.usage(id))?.cpuTimeUs ?? Number.NaN;
    const [idle0, busy0, t0] = [await cpu(idle), await cpu(busy), Date.now()];
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const seconds = (Date.now() - t0) / 1000;
    const idleCores = (await cpu(idle) - idle0) / 1e6 / seconds;
    const busyCores = (await cpu(busy) - busy0) / 1e6 / seconds;
    process.stdout.write(`# CPU from the sandboxes' cgroups (cpuacct.usage): idle ${idleCores.toFixed(4)} cores, busy ${busyCores.toFixed(3)} cores (threshold ${server!.core.options.autoPauseCpuThreshold})\n`);
    assert.ok(busyCores > server!.core.options.autoPauseCpuThreshold, 'the loop shows as CPU use');
    await until(async () => (await stateOf(idle)) === 'paused', 'the idle sandbox is auto-paused', 120_000);
    // The busy one has had no API call, stream or request for longer than idleMs: only its CPU keeps it up.
    await until(async () => Date.now() - busySince > 2 * IDLE_MS, 'twice idleMs has passed for the busy one', 120_000);
    assert.equal(await stateOf(busy), 'running', 'a busy background job is not idle');
    // Wake on request, then the log.
    const woke = await ingress(host, '/index.html?x=1', { 'x-ramify-access-token': token });
    assert.equal(woke.status, 200, woke.body);
    assert.equal(await stateOf(idle), 'running');
    await ingress(host, '/missing.html', { 'x-ramify-access-token': token });
    await ingress(host, '/index.html');
    const log = await call('GET', `/v1/sandboxes/${idle}/ingress/log`);
    assert.equal(log.status, 200, JSON.stringify(log.json));
    const [denied, missing, first] = log.json.entries;
    assert.deepEqual([denied.status, missing.status, first.status], [401, 404, 200], 'newest first');
    assert.deepEqual([first.method, first.path, first.client, first.port, first.woke, first.bytes], ['GET', '/index.html?x=1', '127.0.0.1', 8000, true, 'hello over tls\n'.length]);
    assert.ok(first.durationMs > 0);
    assert.equal(log.json.wakeups, 1);
    assert.ok(log.json.lastWakeAt);
    assert.ok(!JSON.stringify(log.json).includes(token), 'the token is never logged');
    const denyLog = await fetch(`${server!.url}/v1/sandboxes/${idle}/ingress/log`);
    assert.equal(denyLog.status, 401, 'the log needs the API key');
    await call('PUT', `/v1/sandboxes/${busy}/auto-pause`, { autoPause: null });
    await call('DELETE', `/v1/sandboxes/${busy}`);
  });

  test('the ingress firewall table, deleted from outside, is re-installed and the host is refused again', async () => {
    const id = await serving({});
    const slot = (await server!.core.store.getSandbox(id))?.slot as number;
    const { slotAddress } = slotAddresses(layoutForPrefix(PREFIX), slot);
    const reach = (): Promise<string> => new Promise((resolve) => {
      const s = connect({ host: slotAddress, port: 8000 });
      s.once('connect', () => {
        s.destroy();
        resolve('connected');
      });
      s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });
    assert.equal(await reach(), 'EHOSTUNREACH');
    execFileSync('nft', ['delete', 'table', 'inet', `${PREFIX}_ingress`]);
    await until(() => ingressFirewallInstalled(PREFIX), 'the watchdog re-installs the ingress table');
    assert.equal(await reach(), 'EHOSTUNREACH', 'the host is refused again');
    const { host, token } = await urlOf(id);
    assert.equal((await ingress(host, '/index.html', { 'x-ramify-access-token': token })).status, 200, 'the ingress still reaches it');
  });
});
