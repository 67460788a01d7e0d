import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { promises as dnsPromises } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { formatEgressRule, parseEgressPolicy, ruleForName } from '@ramify/core';
import { FakeInternet } from '../../testing/fake-internet.js';
import { EgressProxy, type EgressOriginalDestination, type EgressProxyDecision, type EgressProxyOptions, type EgressProxySandbox } from './egress-proxy.js';

// Real sockets: the proxy listens on loopback in this process, upstream is the fake internet (prefix `rmpx`),
// reached through the routes the rig installs; names resolve through the rig's DNS server.
let rig: FakeInternet;
let proxy: EgressProxy;
let ports: { tls: number; http: number; echo: number };
let rules: string[];
let knownSource: boolean;
let intended: EgressOriginalDestination | null;
let decisions: EgressProxyDecision[];
let resolved: string[];
/** Answers that bypass the rig's DNS server (for answers it cannot give, such as IPv6). */
let fakeAnswers: Record<string, string[]>;
const waiters = new Set<() => void>();

function sandboxFor(source: string): EgressProxySandbox | null {
  if (!knownSource || source !== '127.0.0.1') return null;
  const policy = parseEgressPolicy(rules);
  return {
    sandboxId: 'sbx-1',
    allow(name, port) {
      const rule = ruleForName(policy, name);
      const portOk = rule !== null && (rule.kind === 'any' || rule.port === null || (rule.port.from <= port && port <= rule.port.to));
      return { allowed: portOk, rule: rule && portOk ? formatEgressRule(rule) : null };
    },
  };
}

function options(overrides: Partial<EgressProxyOptions> = {}): EgressProxyOptions {
  const resolver = new dnsPromises.Resolver({ timeout: 2000, tries: 1 });
  resolver.setServers([`${rig.dns.address}:${rig.dns.port}`]);
  return {
    policyForSource: sandboxFor,
    resolve: async (name) => {
      resolved.push(name);
      return fakeAnswers[name] ?? resolver.resolve4(name);
    },
    onDecision: (d) => {
      decisions.push(d);
      for (const w of waiters) w();
    },
    originalDestination: (_socket, listener) => (intended === null ? null : { ...intended, port: listener.originalPort }),
    headerTimeoutMs: 1000,
    ...overrides,
  };
}

function decision(predicate: (d: EgressProxyDecision) => boolean = () => true): Promise<EgressProxyDecision> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const found = decisions.find(predicate);
      if (!found) return;
      waiters.delete(check);
      clearTimeout(timer);
      resolve(found);
    };
    const timer = setTimeout(() => {
      waiters.delete(check);
      reject(new Error(`no matching decision; got ${JSON.stringify(decisions)}`));
    }, 10_000);
    waiters.add(check);
    check();
  });
}

// Addresses of our own (not the rig's defaults), so that other rigs may run at the same time.
const WWW = '203.0.113.110';
const CDN = '203.0.113.120';
const ECHO = '198.51.100.107';

before(async () => {
  rig = await FakeInternet.start({
    prefix: 'rmpx',
    web: [{ address: WWW, names: ['www.example.com', 'api.example.com'] }, { address: CDN, names: ['cdn.example.net'] }],
    echo: [{ address: ECHO, port: 8080 }],
    dns: { address: '198.51.100.153' },
    zone: {
      'www.example.com': { a: [WWW] },
      'api.example.com': { a: [WWW] },
      'cdn.example.net': { a: [CDN] },
      'echo.example.org': { a: [ECHO] },
      'private.example.com': { a: ['127.0.0.1', '10.1.2.3', '169.254.169.254'] },
    },
  });
  proxy = new EgressProxy(options());
  ports = {
    tls: (await proxy.listen({ address: '127.0.0.1', port: 0, protocol: 'tls', originalPort: 443 })).port,
    http: (await proxy.listen({ address: '127.0.0.1', port: 0, protocol: 'http', originalPort: 80 })).port,
    echo: (await proxy.listen({ address: '127.0.0.1', port: 0, protocol: 'http', originalPort: 8080 })).port,
  };
});
after(async () => {
  await proxy?.close();
  await rig?.teardown();
});
beforeEach(async () => {
  // Let the previous test's upstream connections finish closing, so their close events stay out of this test.
  await rig.flush();
  for (const open of rig.events('connection')) {
    await rig.waitForEvent((e) => e.kind === 'connection-closed' && e.conn === open.conn);
  }
  rules = ['www.example.com', '*.example.com:443', 'echo.example.org:8080'];
  knownSource = true;
  intended = { address: WWW, port: 0 };
  decisions = [];
  resolved = [];
  fakeAnswers = {};
  rig.clearEvents();
});

function get(port: number, o: { tls: boolean; host: string; servername?: string }): Promise<{ status: number; body: string }> {
  const request = o.tls ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/p', headers: { host: o.host }, servername: o.servername, ca: rig.certPem, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject).end();
  });
}

/** Connect, send `data`, collect what comes back until the proxy closes the connection. */
function exchange(port: number, data: Buffer | string, options: { end: boolean } = { end: false }): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    const s = connect({ host: '127.0.0.1', port }, () => (options.end ? s.end(data) : s.write(data)));
    s.setEncoding('latin1').on('data', (d: string) => (out += d));
    s.on('error', () => undefined).on('close', () => resolve(out));
  });
}

/** Nothing reached any server of the rig since the last `clearEvents`. */
async function assertRigUntouched(): Promise<void> {
  await rig.flush();
  assert.deepEqual(rig.events().filter((e) => e.kind !== 'dns-query'), []);
}

test('allowed SNI reaches the server of that name; the rig sees the SNI; the decision is logged', async () => {
  const { status, body } = await get(ports.tls, { tls: true, host: 'www.example.com', servername: 'www.example.com' });
  assert.equal(status, 200);
  assert.match(body, /hello from 203\.0\.113\.110:443 host=www\.example\.com sni=www\.example\.com/);
  const tls = rig.events('tls');
  assert.deepEqual(tls.map((e) => [e.local, e.sni, e.outcome]), [[WWW, 'www.example.com', 'handshake']]);
  const d = await decision();
  assert.ok(Number.isInteger(d.sourcePort) && d.sourcePort > 0);
  assert.deepEqual(d, {
    sandboxId: 'sbx-1', source: '127.0.0.1', sourcePort: d.sourcePort, name: 'www.example.com', port: 443, protocol: 'tls', verdict: 'allowed', reason: 'allowed',
    rule: 'www.example.com', destination: WWW, intended: { address: WWW, port: 443 },
  });
});

test('denied SNI never reaches any server and is never resolved', async () => {
  await assert.rejects(get(ports.tls, { tls: true, host: 'cdn.example.net', servername: 'cdn.example.net' }));
  const d = await decision();
  assert.deepEqual([d.verdict, d.reason, d.name, d.destination], ['denied', 'policy', 'cdn.example.net', null]);
  assert.deepEqual(resolved, []);
  await assertRigUntouched();
});

test('allowed SNI sent to a denied address: the proxy dials the resolved name, not the address', async () => {
  intended = { address: CDN, port: 0 }; // cdn.example.net's server, which the policy denies
  const { body } = await get(ports.tls, { tls: true, host: 'api.example.com', servername: 'api.example.com' });
  assert.match(body, /hello from 203\.0\.113\.110:443 host=api\.example\.com sni=api\.example\.com/);
  await rig.flush();
  assert.deepEqual([...new Set(rig.events('connection').map((e) => e.local))], [WWW]);
  const d = await decision();
  assert.deepEqual([d.verdict, d.rule, d.destination, d.intended?.address], ['allowed', '*.example.com:443', WWW, CDN]);
});

test('HTTP: allowed Host is forwarded; a denied Host on an allowed address gets 403 and no upstream connection', async () => {
  rules = ['www.example.com:80'];
  const ok = await get(ports.http, { tls: false, host: 'www.example.com' });
  assert.match(ok.body, /hello from 203\.0\.113\.110:80 host=www\.example\.com/);
  for (const open of rig.events('connection')) await rig.waitForEvent((e) => e.kind === 'connection-closed' && e.conn === open.conn);
  rig.clearEvents();
  decisions = [];
  const denied = await get(ports.http, { tls: false, host: 'api.example.com' }); // same address as www
  assert.equal(denied.status, 403);
  assert.match(denied.body, /egress policy: api\.example\.com:80 is not allowed/);
  const d = await decision();
  assert.deepEqual([d.verdict, d.reason, d.name, d.port], ['denied', 'policy', 'api.example.com', 80]);
  await assertRigUntouched();
});

test('TLS without SNI (client dialing an IP) is closed and never reaches upstream', async () => {
  rules = ['*'];
  await new Promise<void>((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port: ports.tls, ca: rig.certPem }); // IP host: Node sends no SNI
    s.on('secureConnect', () => reject(new Error('handshake completed')));
    s.on('error', () => resolve()).on('close', () => resolve());
  });
  const d = await decision();
  assert.deepEqual([d.verdict, d.reason, d.name], ['denied', 'no-name', null]);
  await assertRigUntouched();
});

test('HTTP without Host, or with an IP Host, gets 403', async () => {
  rules = ['*'];
  assert.match(await exchange(ports.http, 'GET / HTTP/1.0\r\n\r\n'), /^HTTP\/1\.1 403 /);
  assert.match(await exchange(ports.http, 'GET / HTTP/1.1\r\nHost: 203.0.113.110\r\n\r\n'), /^HTTP\/1\.1 403 /);
  await decision((d) => decisions.length === 2);
  assert.deepEqual(decisions.map((d) => d.reason), ['no-name', 'no-name']);
  await assertRigUntouched();
});

test('oversize and slow heads are closed within the limits; garbage is refused', async () => {
  const huge = `GET / HTTP/1.1\r\nHost: www.example.com\r\n${'X-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n'.repeat(500)}\r\n`;
  assert.match(await exchange(ports.http, huge), /^HTTP\/1\.1 431 /);
  const bigHello = Buffer.concat([Buffer.from([0x16, 0x03, 0x01, 0x40, 0x00, 0x01]), Buffer.alloc(3000)]); // never completes
  assert.equal(await exchange(ports.tls, bigHello), ''); // closed after headerTimeoutMs
  assert.equal(await exchange(ports.http, 'GET / HTTP/1.1\r\nHost: www.exa'), ''); // slow: closed after headerTimeoutMs
  assert.match(await exchange(ports.http, 'SSH-2.0-OpenSSH_9.2\r\n'), /^HTTP\/1\.1 400 /);
  assert.equal(await exchange(ports.tls, 'GET / HTTP/1.1\r\n'), '');
  await decision(() => decisions.length === 5);
  assert.deepEqual(decisions.map((d) => d.reason).sort(), ['malformed', 'malformed', 'timeout', 'timeout', 'too-large']);
  await assertRigUntouched();
});

test('unknown source and unknown original destination are closed', async () => {
  knownSource = false;
  assert.match(await exchange(ports.http, 'GET / HTTP/1.1\r\nHost: www.example.com\r\n\r\n'), /^HTTP\/1\.1 403 /);
  knownSource = true;
  intended = null;
  assert.match(await exchange(ports.http, 'GET / HTTP/1.1\r\nHost: www.example.com\r\n\r\n'), /^HTTP\/1\.1 403 /);
  await decision(() => decisions.length === 2);
  assert.deepEqual(decisions.map((d) => [d.reason, d.sandboxId]), [['unknown-source', null], ['unknown-destination', null]]);
  await assertRigUntouched();
});

test('an allowed name that resolves only to private or IPv6 addresses is never dialed; an unknown name fails', async () => {
  rules = ['private.example.com'];
  assert.match(await exchange(ports.http, 'GET / HTTP/1.1\r\nHost: private.example.com\r\n\r\n'), /^HTTP\/1\.1 403 /);
  const d = await decision();
  assert.deepEqual([d.verdict, d.reason, d.destination], ['denied', 'blocked-address', null]);
  rules = ['v6.example.com'];
  fakeAnswers = { 'v6.example.com': ['::1', '::ffff:127.0.0.1'] };
  assert.match(await exchange(ports.http, 'GET / HTTP/1.1\r\nHost: v6.example.com\r\n\r\n'), /^HTTP\/1\.1 403 /);
  assert.equal((await decision((x) => x.name === 'v6.example.com')).reason, 'blocked-address');
  rules = ['nothing.example.com'];
  assert.match(await exchange(ports.http, 'GET / HTTP/1.1\r\nHost: nothing.example.com\r\n\r\n'), /^HTTP\/1\.1 502 /);
  assert.equal((await decision((x) => x.name === 'nothing.example.com')).reason, 'resolve-failed');
  await assertRigUntouched();
});

/** Write `data` with backpressure, resolving once everything is handed to the kernel. */
async function writeAll(s: Socket, data: Buffer, chunk: number): Promise<void> {
  for (let i = 0; i < data.length; i += chunk) {
    if (!s.write(data.subarray(i, i + chunk))) await new Promise((r) => s.once('drain', r));
  }
}

test('a long-lived allowed connection streams both ways (ping-pong, then 16 MiB echoed intact) and forwards a half-close', async () => {
  const s = connect({ host: '127.0.0.1', port: ports.echo });
  const received: Buffer[] = [];
  let total = 0;
  let wanted = 0;
  let onProgress: () => void = () => undefined;
  s.on('data', (d: Buffer) => {
    received.push(d);
    total += d.length;
    if (total >= wanted) onProgress();
  });
  const upTo = (n: number): Promise<void> => new Promise((resolve) => {
    wanted = n;
    onProgress = resolve;
    if (total >= n) resolve();
  });
  const ended = new Promise<void>((resolve) => s.once('end', () => resolve()));
  const head = Buffer.from('GET /stream HTTP/1.1\r\nHost: echo.example.org\r\n\r\n');
  await new Promise<void>((resolve) => s.once('connect', () => resolve()));
  s.write(head);
  await upTo(head.length);
  // Ping-pong: each message comes back before the next one is sent.
  let sent = head.length;
  for (let i = 0; i < 20; i++) {
    const msg = Buffer.from(`ping ${i}\n`);
    s.write(msg);
    sent += msg.length;
    await upTo(sent);
  }
  // Bulk: 16 MiB without reading faster than the echo can send (the pipe must honour backpressure).
  const bulk = randomBytes(16 * 1024 * 1024);
  await writeAll(s, bulk, 64 * 1024);
  sent += bulk.length;
  s.end(); // half-close: the echo still answers everything, then ends
  await upTo(sent);
  await ended;
  const all = Buffer.concat(received);
  assert.equal(all.length, sent);
  assert.equal(createHash('sha256').update(all.subarray(all.length - bulk.length)).digest('hex'), createHash('sha256').update(bulk).digest('hex'));
  const d = await decision();
  assert.deepEqual([d.verdict, d.name, d.port, d.destination, d.rule], ['allowed', 'echo.example.org', 8080, ECHO, 'echo.example.org:8080']);
  const closed = await rig.waitForEvent((e) => e.kind === 'connection-closed' && e.service === 'echo');
  assert.equal(closed.kind === 'connection-closed' && closed.bytesIn, sent);
});

test('revalidate cuts open connections the new policy denies and keeps the others', async () => {
  const open = (): Promise<Socket> => new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port: ports.echo }, () => s.write('GET / HTTP/1.1\r\nHost: echo.example.org\r\n\r\n'));
    s.once('data', () => resolve(s));
    s.on('error', () => undefined);
  });
  const a = await open();
  assert.equal(proxy.connections().length, 1);
  assert.equal(await proxy.revalidate(), 0);
  rules = ['www.example.com'];
  const closed = new Promise<void>((resolve) => a.once('close', () => resolve()));
  assert.equal(await proxy.revalidate(), 1);
  await closed;
  const d = await decision((x) => x.reason === 'revoked');
  assert.deepEqual([d.verdict, d.name, d.sandboxId], ['denied', 'echo.example.org', 'sbx-1']);
  assert.equal(proxy.connections().length, 0);
});

test('connections beyond maxConnections are closed at once', async () => {
  const small = new EgressProxy(options({ maxConnections: 1 }));
  try {
    const { port } = await small.listen({ address: '127.0.0.1', port: 0, protocol: 'http', originalPort: 80 });
    const first = connect({ host: '127.0.0.1', port }); // holds the only slot (never sends a head)
    first.on('error', () => undefined);
    await new Promise<void>((resolve) => first.once('connect', () => resolve()));
    while (small.openConnections < 1) await new Promise((r) => setImmediate(r));
    assert.equal(await exchange(port, 'GET / HTTP/1.1\r\nHost: www.example.com\r\n\r\n'), '');
    assert.equal((await decision()).reason, 'overloaded');
    first.destroy();
  } finally {
    await small.close();
  }
});
