import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { run } from '../exec.js';
import { FakeInternet } from './fake-internet.js';
import { queryDnsFrom } from './dns-query.js';
import type { VethNamespace } from './veth-namespace.js';

// The rig self-test: real namespaces under the test-only prefix `rmqa`, removed in `after`. The served
// addresses are its own (not the defaults), so that other rigs may run at the same time; the zone is the default.
const WWW = '203.0.113.61';
const CDN = '203.0.113.62';
const ECHO = '198.51.100.67';
let rig: FakeInternet;
let client: VethNamespace;

before(async () => {
  rig = await FakeInternet.start({
    prefix: 'rmqa',
    web: [{ address: WWW, names: ['www.example.com', 'api.example.com'] }, { address: CDN, names: ['cdn.example.net'] }],
    echo: [{ address: ECHO, port: 8080 }],
    dns: { address: '198.51.100.63' },
  });
  client = await rig.addClient('one');
});
after(() => rig?.teardown());

function get(url: string, options: { host?: string; servername?: string; ca?: string } = {}): Promise<string> {
  const u = new URL(url);
  const request = u.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    request({ host: u.hostname, port: u.port || undefined, path: u.pathname, headers: options.host ? { host: options.host } : {}, servername: options.servername, ca: options.ca, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => resolve(body));
    }).on('error', reject).end();
  });
}

test('HTTP from the host reaches the rig; the request and its Host are logged', async () => {
  const body = await get(`http://${WWW}/hello`, { host: 'api.example.com' });
  assert.match(body, /hello from 203\.0\.113\.61:80 host=api\.example\.com/);
  const e = await rig.waitForEvent((x) => x.kind === 'http-request' && x.path === '/hello');
  assert.equal(e.kind, 'http-request');
  if (e.kind !== 'http-request') return;
  assert.equal(e.host, 'api.example.com');
  assert.equal(e.local, WWW);
  assert.equal(e.remote, rig.namespace.hostAddress);
});

test('HTTPS: one address serves two names; SNI and Host are logged; the certificate verifies with certPem', async () => {
  for (const name of ['www.example.com', 'api.example.com']) {
    const body = await get(`https://${WWW}/${name}`, { host: name, servername: name, ca: rig.certPem });
    assert.match(body, new RegExp(`host=${name} sni=${name}`));
  }
  await rig.flush();
  const tls = rig.events('tls').filter((e) => e.local === WWW);
  assert.deepEqual(tls.map((e) => [e.sni, e.outcome]), [['www.example.com', 'handshake'], ['api.example.com', 'handshake']]);
  const requests = rig.events('http-request').filter((e) => e.service === 'https');
  assert.deepEqual(requests.map((e) => [e.sni, e.host]), [['www.example.com', 'www.example.com'], ['api.example.com', 'api.example.com']]);
});

test('connections that never send a request are logged, with the SNI of a failed handshake', async () => {
  // Plain TCP connect and close.
  await new Promise<void>((resolve, reject) => {
    const s = connect({ host: CDN, port: 80 }, () => s.end());
    s.on('close', () => resolve()).on('error', reject);
  });
  const plain = await rig.waitForEvent((e) => e.kind === 'connection-closed' && e.local === CDN && e.localPort === 80);
  assert.equal(plain.kind === 'connection-closed' && plain.bytesIn, 0);
  // A TLS client that rejects the certificate (no `ca`): the handshake fails, the SNI is still known.
  await new Promise<void>((resolve) => {
    const s = tlsConnect({ host: CDN, port: 443, servername: 'cdn.example.net' });
    s.on('error', () => resolve());
    s.on('secureConnect', () => resolve());
  });
  const tls = await rig.waitForEvent((e) => e.kind === 'tls' && e.local === CDN);
  assert.equal(tls.kind === 'tls' && tls.sni, 'cdn.example.net');
  assert.equal(tls.kind === 'tls' && tls.outcome, 'failed');
  await rig.flush();
  assert.equal(rig.events('http-request').filter((e) => e.local === CDN).length, 0);
});

test('TCP echo on an arbitrary port, from a client namespace', async () => {
  const r = await client.exec([process.execPath, '-e',
    `const s=require('net').connect(8080,process.argv[1],()=>s.end('ping'));let o='';s.on('data',d=>o+=d).on('end',()=>console.log(o))`, ECHO]);
  assert.equal(r.stdout.trim(), 'ping');
  const e = await rig.waitForEvent((x) => x.kind === 'connection' && x.service === 'echo');
  assert.equal(e.kind === 'connection' && e.remote, client.address);
});

test('the scripted DNS server answers its zone over UDP and TCP and logs every query', async () => {
  const udp = await queryDnsFrom(client.netnsPath, [{ name: 'www.example.com' }, { name: 'alias.example.com' }, { name: 'nope.example.com' }, { name: 'big.example.com' }], { server: rig.dns.address });
  assert.deepEqual(udp.map((r) => r.rcode), ['NOERROR', 'NOERROR', 'NXDOMAIN', 'NOERROR']);
  assert.deepEqual(udp[0]!.answers.map((a) => [a.type, a.data, a.ttl]), [['A', '203.0.113.10', 300]]);
  assert.deepEqual(udp[1]!.answers.map((a) => a.type), ['CNAME', 'A']);
  assert.equal(udp[3]!.truncated, true);
  const tcp = await queryDnsFrom(client.netnsPath, [{ name: 'big.example.com' }], { server: rig.dns.address, transport: 'tcp' });
  assert.equal(tcp[0]!.answers.length, 30);
  await rig.flush();
  const queries = rig.events('dns-query');
  assert.deepEqual(queries.map((q) => [q.name, q.transport]), [
    ['www.example.com', 'udp'], ['alias.example.com', 'udp'], ['nope.example.com', 'udp'], ['big.example.com', 'udp'], ['big.example.com', 'tcp'],
  ]);
  assert.ok(queries.every((q) => q.remote === client.address));
});

test('teardown removes every namespace, interface and route; a second rig with the prefix starts clean', async () => {
  const other = await FakeInternet.start({ prefix: 'rmqc', web: [], echo: [], dns: { address: '198.51.100.55' } });
  const names = [other.namespace.name, (await other.addClient('x')).name];
  await other.teardown();
  for (const name of names) {
    assert.equal(existsSync(`/var/run/netns/${name}`), false);
    assert.notEqual((await run(['ip', 'link', 'show', name])).code, 0);
  }
  const route = await run(['ip', '-o', '-4', 'route', 'show', 'exact', '198.51.100.55/32']);
  assert.equal(route.stdout.trim(), '');
});
