import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseEgressPolicy, type NetworkAttachment } from '@ramify/core';
import { run, runChecked } from '../exec.js';
import { NamespaceNetwork } from '../namespace-network.js';
import { DNS_SERVICE_ADDRESS, layoutForPrefix, slotAddresses } from '../slots.js';
import { queryDnsFrom } from '../testing/dns-query.js';
import { FakeInternet } from '../testing/fake-internet.js';
import { probeFrom, type NetProbeResult } from '../testing/net-probe.js';
import type { EgressProxyDecision } from './proxy/egress-proxy-types.js';
import { startHostEgress, type HostEgress } from './host-egress.js';

// The SNI/Host proxy wired into the host table. A "sandbox" is a NamespaceNetwork slot (prefix `rxa`) whose
// host table is the enforcer's; the fake internet (prefix `rxai`, addresses of its own so that other rigs
// may run at the same time) is the only destination. Everything is removed in `after`.
const PREFIX = 'rxa';
const SHARED = '203.0.113.171'; // serves allowed.test, denied.test and a.pkg.test
const OTHER = '203.0.113.172'; // serves other.test (denied)
const DIRECT = '198.51.100.173'; // serves ip.test; reached through an address rule
const ECHO = '203.0.113.174'; // a TCP echo on port 80, named echo.test
const DNS = '198.51.100.175';

let rig: FakeInternet;
let egress: HostEgress;
let network: NamespaceNetwork;
let sbx: NetworkAttachment;
const decisions: EgressProxyDecision[] = [];

before(async () => {
  await new NamespaceNetwork({ prefix: PREFIX }).destroyAll();
  rig = await FakeInternet.start({
    prefix: 'rxai',
    web: [
      { address: SHARED, names: ['allowed.test', 'denied.test', 'a.pkg.test'] },
      { address: OTHER, names: ['other.test'] },
      { address: DIRECT, names: ['ip.test'] },
    ],
    echo: [{ address: ECHO, port: 80 }],
    dns: { address: DNS },
    zone: {
      'allowed.test': { a: [SHARED] },
      'denied.test': { a: [SHARED] },
      'a.pkg.test': { a: [SHARED] },
      'other.test': { a: [OTHER] },
      'ip.test': { a: [DIRECT] },
      'echo.test': { a: [ECHO] },
    },
  });
  egress = await startHostEgress({
    prefix: PREFIX, layout: layoutForPrefix(PREFIX), upstreams: [{ address: DNS }], watchIntervalMs: 200, onProxyDecision: (d) => decisions.push(d),
  });
  network = new NamespaceNetwork({ prefix: PREFIX, hostFirewall: egress.enforcer });
  sbx = await network.attach('sbx_a', 0);
});

after(async () => {
  await egress?.close();
  await network?.destroyAll();
  await rig?.teardown();
  const left = await run(['nft', 'list', 'table', 'inet', PREFIX]);
  assert.notEqual(left.code, 0, 'the table is gone');
});

beforeEach(async () => {
  await rig.flush();
  rig.clearEvents();
  decisions.length = 0;
});

const setPolicy = (rules: string[]) => egress.enforcer.apply('sbx_a', 0, parseEgressPolicy(rules));
const http = (address: string, host: string): Promise<NetProbeResult> => probeFrom(sbx.netnsPath, { kind: 'http', address, host });
const https = (address: string, servername: string | null, host = servername ?? address): Promise<NetProbeResult> =>
  probeFrom(sbx.netnsPath, { kind: 'https', address, host, servername, ca: rig.certPem });

/** Addresses of the rig that saw a connection since the last `clearEvents`. */
async function reached(): Promise<string[]> {
  await rig.flush();
  return [...new Set(rig.events().filter((e) => e.kind !== 'dns-query').map((e) => e.local))];
}

test('an allowed name passes over HTTP and HTTPS, through the proxy (no DNS lookup by the sandbox needed)', async () => {
  await setPolicy(['allowed.test']);
  const plain = await http(SHARED, 'allowed.test');
  assert.equal(plain.status, 200);
  assert.match(plain.body!, /hello from 203\.0\.113\.171:80 host=allowed\.test/);
  const tls = await https(SHARED, 'allowed.test');
  assert.equal(tls.status, 200);
  assert.match(tls.body!, /hello from 203\.0\.113\.171:443 host=allowed\.test sni=allowed\.test/);
  assert.deepEqual(decisions.map((d) => [d.protocol, d.verdict, d.name, d.rule, d.sandboxId]), [
    ['http', 'allowed', 'allowed.test', 'allowed.test', 'sbx_a'],
    ['tls', 'allowed', 'allowed.test', 'allowed.test', 'sbx_a'],
  ]);
});

test('a denied Host or SNI on an address learned for an allowed name is refused; nothing reaches the rig', async () => {
  await setPolicy(['allowed.test']);
  const [answer] = await queryDnsFrom(sbx.netnsPath, [{ name: 'allowed.test' }], { server: DNS_SERVICE_ADDRESS });
  assert.deepEqual(answer!.answers.map((r) => r.data), [SHARED], 'the shared address is now open to the sandbox');
  await rig.flush();
  rig.clearEvents();
  const plain = await http(SHARED, 'denied.test');
  assert.equal(plain.status, 403);
  assert.equal((await https(SHARED, 'denied.test')).outcome, 'failed');
  assert.equal((await https(SHARED, null)).outcome, 'failed', 'TLS without SNI');
  assert.deepEqual(await reached(), []);
  assert.deepEqual(decisions.map((d) => [d.verdict, d.reason, d.name]), [['denied', 'policy', 'denied.test'], ['denied', 'policy', 'denied.test'], ['denied', 'no-name', null]]);
});

test('the allowed SNI sent to a denied address (as after an /etc/hosts entry) goes to the name\'s address, never to the denied one', async () => {
  await setPolicy(['allowed.test', '*.pkg.test:443']);
  const spoofed = await https(OTHER, 'allowed.test');
  assert.equal(spoofed.status, 200);
  assert.match(spoofed.body!, /hello from 203\.0\.113\.171:443 .*sni=allowed\.test/);
  const wildcard = await https(OTHER, 'a.pkg.test');
  assert.match(wildcard.body!, /hello from 203\.0\.113\.171:443 .*sni=a\.pkg\.test/);
  assert.equal((await http(OTHER, 'a.pkg.test')).status, 403, 'the wildcard rule is for port 443 only');
  assert.deepEqual(await reached(), [SHARED]);
});

test('an address or CIDR rule on 443 bypasses the proxy (TLS without SNI works); other addresses stay proxied', async () => {
  await setPolicy([`${DIRECT}:443`, '203.0.113.172/32']);
  const direct = await https(DIRECT, null);
  assert.equal(direct.status, 200, JSON.stringify(direct));
  assert.match(direct.body!, /hello from 198\.51\.100\.173:443 host=198\.51\.100\.173 sni=$/m);
  assert.equal((await http(OTHER, 'whatever.invalid')).status, 200, 'the CIDR rule opens port 80 directly, any Host');
  assert.equal((await http(DIRECT, 'ip.test')).status, 403, 'the address rule is for 443 only: port 80 is proxied and refused');
  assert.equal((await https(SHARED, null)).outcome, 'failed', 'an address no rule names is proxied');
  assert.deepEqual(decisions.map((d) => [d.protocol, d.reason]), [['http', 'policy'], ['tls', 'no-name']]);
});

test('open mode is not proxied; the proxy and resolver ports are unreachable directly; host ports are closed', async () => {
  await setPolicy([]);
  assert.equal((await https(OTHER, null)).status, 200, 'TLS without SNI goes straight through');
  assert.deepEqual(decisions, []);
  await setPolicy(['allowed.test']);
  const host = slotAddresses(layoutForPrefix(PREFIX), 0).hostAddress;
  for (const port of [egress.proxyPorts.http, egress.proxyPorts.tls, egress.resolver.address.port, 22]) {
    assert.equal((await probeFrom(sbx.netnsPath, { kind: 'tcp', address: host, port, timeoutMs: 800 })).outcome, 'failed', `host port ${port}`);
  }
  assert.equal((await probeFrom(sbx.netnsPath, { kind: 'tcp', address: host, port: 80, timeoutMs: 800 })).outcome, 'failed', 'slot addresses are never proxied');
});

test('a policy change cuts a proxied connection the new policy denies', async () => {
  await setPolicy(['echo.test:80']);
  const script = `const s=require('net').connect(80,process.argv[1],()=>{s.write('GET / HTTP/1.1\\r\\nHost: echo.test\\r\\n\\r\\n');setInterval(()=>s.write('x'),100)});
s.on('data',(d)=>console.log('echo '+d.length));s.on('close',()=>{console.log('closed');process.exit(0)});s.on('error',()=>{});setTimeout(()=>process.exit(0),8000);`;
  const child = spawn('nsenter', [`--net=${sbx.netnsPath}`, process.execPath, '-e', script, ECHO], { stdio: ['ignore', 'pipe', 'ignore'] });
  const lines: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (l) => lines.push(l));
  try {
    while (lines.length < 3) await sleep(50);
    await setPolicy(['allowed.test']);
    const deadline = Date.now() + 5000;
    while (!lines.includes('closed') && Date.now() < deadline) await sleep(50);
    assert.ok(lines.includes('closed'), 'the connection was cut');
    assert.ok(decisions.some((d) => d.reason === 'revoked' && d.name === 'echo.test'));
  } finally {
    child.kill('SIGKILL');
  }
});

test('the watchdog re-installs the table with the redirect', async () => {
  await setPolicy(['allowed.test']);
  await runChecked(['nft', 'delete', 'table', 'inet', PREFIX]);
  const deadline = Date.now() + 5000;
  while (!(await egress.enforcer.isInstalled()) && Date.now() < deadline) await sleep(100);
  assert.equal(await egress.enforcer.isInstalled(), true);
  assert.match(await runChecked(['nft', 'list', 'chain', 'inet', PREFIX, 'proxy_redirect']), new RegExp(`redirect to :${egress.proxyPorts.tls}`));
  assert.equal((await http(SHARED, 'denied.test')).status, 403);
  assert.equal((await https(SHARED, 'allowed.test')).status, 200);
  assert.deepEqual(await reached(), [SHARED]);
});
