import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { DENY_ALL_EGRESS_POLICY, parseEgressPolicy, type NetworkAttachment } from '@ramify/core';
import { run, runChecked } from '../../exec.js';
import { NamespaceNetwork } from '../../namespace-network.js';
import { DNS_SERVICE_ADDRESS, layoutForPrefix, slotAddresses } from '../../slots.js';
import { FakeInternet } from '../../testing/fake-internet.js';
import { queryDnsFrom } from '../../testing/dns-query.js';
import { pingFrom, probeFrom } from '../../testing/net-probe.js';
import { startHostEgress, type HostEgress } from '../host-egress.js';

// Two "sandboxes" are plain NamespaceNetwork slots (prefix `rme`) whose host table is the enforcer's;
// the fake internet (prefix `rmei`, addresses of its own so that other rigs may run at the same time) is
// the only destination. Everything is removed in `after`.
const PREFIX = 'rme';
const layout = layoutForPrefix(PREFIX);
let rig: FakeInternet;
let egress: HostEgress;
let network: NamespaceNetwork;
let a: NetworkAttachment;
let b: NetworkAttachment;
let hostServer: Server;
let hostPort = 0;

const WEB = '203.0.113.41'; // www.example.com, api.example.com
const CDN = '203.0.113.42'; // cdn.example.net
const ECHO = { address: '198.51.100.47', port: 8080 };
const DNS = '198.51.100.43';
/** An echo server on a private address, inside the rig's own namespace. */
const PRIVATE_ECHO = { address: '10.199.77.7', port: 8080 };

before(async () => {
  await new NamespaceNetwork({ prefix: PREFIX }).destroyAll();
  rig = await FakeInternet.start({
    prefix: 'rmei',
    web: [{ address: WEB, names: ['www.example.com', 'api.example.com'] }, { address: CDN, names: ['cdn.example.net'] }],
    echo: [ECHO, PRIVATE_ECHO, { address: WEB, port: 7001 }, { address: WEB, port: 7002 }, { address: CDN, port: 7001 }],
    dns: { address: DNS },
    zone: { 'www.example.com': { a: [WEB] }, 'api.example.com': { a: [WEB] }, 'cdn.example.net': { a: [CDN] } },
  });
  egress = await startHostEgress({ prefix: PREFIX, layout, upstreams: [{ address: rig.dns.address }], watchIntervalMs: 200 });
  network = new NamespaceNetwork({ prefix: PREFIX, hostFirewall: egress.enforcer });
  a = await network.attach('sbx_a', 0);
  b = await network.attach('sbx_b', 1);
  await egress.enforcer.apply('sbx_b', 1, parseEgressPolicy([]));
  hostServer = createServer((s) => s.end('host\n'));
  await new Promise<void>((resolve) => hostServer.listen(0, '0.0.0.0', resolve));
  hostPort = (hostServer.address() as { port: number }).port;
});

after(async () => {
  hostServer?.close();
  await egress?.close();
  await network?.destroyAll();
  await rig?.teardown();
  const left = await run(['nft', 'list', 'table', 'inet', PREFIX]);
  assert.notEqual(left.code, 0, 'the table is gone');
});

beforeEach(() => rig.clearEvents());

const setPolicy = (rules: string[]) => egress.enforcer.apply('sbx_a', 0, parseEgressPolicy(rules));

/** Try a TCP connection from a namespace; `connected` means the handshake finished. */
async function tcp(netnsPath: string, address: string, port: number, localAddress?: string): Promise<'connected' | 'failed'> {
  const script = `const s=require('net').connect({host:process.argv[1],port:+process.argv[2],${localAddress ? 'localAddress:process.argv[3],' : ''}timeout:800});
s.on('connect',()=>{console.log('connected');s.destroy()});s.on('timeout',()=>{console.log('failed');s.destroy()});s.on('error',()=>console.log('failed'));`;
  const r = await runChecked(['nsenter', `--net=${netnsPath}`, process.execPath, '-e', script, address, String(port), ...(localAddress ? [localAddress] : [])]);
  return r.trim() === 'connected' ? 'connected' : 'failed';
}

/**
 * True when a TCP connection from the namespace reached the rig at `address:port` (in allowlist mode ports
 * 80/443 are proxied: the handshake succeeds with the proxy, but nothing reaches the rig without a name).
 */
async function reaches(netnsPath: string, address: string, port: number): Promise<boolean> {
  await rig.flush();
  rig.clearEvents();
  const connected = (await tcp(netnsPath, address, port)) === 'connected';
  await rig.flush();
  return connected && rig.events('connection').some((e) => e.local === address && e.localPort === port);
}

/** The policy sets (`open`, `net`, `netport`, `dns`, `dnsport`) holding an element that names `slotAddress`. */
async function openings(slotAddress: string): Promise<string[]> {
  const found: string[] = [];
  for (const set of ['open', 'net', 'netport', 'dns', 'dnsport']) {
    if ((await runChecked(['nft', '-j', 'list', 'set', 'inet', PREFIX, set])).includes(`"${slotAddress}"`)) found.push(set);
  }
  return found;
}

const dns = (name: string, options: { server?: string; transport?: 'udp' | 'tcp' } = {}) =>
  queryDnsFrom(a.netnsPath, [{ name }], { server: options.server ?? DNS_SERVICE_ADDRESS, transport: options.transport ?? 'udp', timeoutMs: 2000 }).then((r) => r[0]!);

async function upstreamNames(): Promise<string[]> {
  await rig.flush();
  return rig.events('dns-query').map((q) => q.name);
}

test('open mode reaches the internet but never metadata, another slot, the host or its resolver port directly', async () => {
  await setPolicy([]);
  assert.equal(await tcp(a.netnsPath, WEB, 80), 'connected');
  assert.equal(await tcp(a.netnsPath, ECHO.address, ECHO.port), 'connected');
  assert.equal(await tcp(a.netnsPath, '169.254.169.254', 80), 'failed');
  assert.equal(await tcp(a.netnsPath, PRIVATE_ECHO.address, PRIVATE_ECHO.port), 'failed', 'a private range is closed in open mode');
  assert.equal(await tcp(a.netnsPath, b.slotAddress, 22), 'failed');
  assert.equal(await tcp(a.netnsPath, slotAddresses(layout, 0).hostAddress, hostPort), 'failed');
  assert.equal(await tcp(a.netnsPath, rig.namespace.hostAddress, hostPort), 'failed');
  assert.equal(await tcp(a.netnsPath, '127.0.0.1', hostPort), 'failed');
  const r = await dns('cdn.example.net');
  assert.deepEqual([r.rcode, r.answers.map((x) => x.data)], ['NOERROR', [CDN]]);
});

test('allowlist: an allowed address and port pass; other ports and addresses are dropped (80/443: proxied)', async () => {
  await setPolicy([`${WEB}:80`]);
  assert.equal(await reaches(a.netnsPath, WEB, 80), true);
  assert.equal(await reaches(a.netnsPath, WEB, 443), false);
  assert.equal(await reaches(a.netnsPath, CDN, 80), false);
  assert.equal(await tcp(a.netnsPath, CDN, 7001), 'failed');
  assert.equal(await tcp(a.netnsPath, ECHO.address, ECHO.port), 'failed');
  // The other slot (open) is unaffected.
  assert.equal(await tcp(b.netnsPath, CDN, 80), 'connected');
});

test('allowlist: a rule naming a private range opens it', async () => {
  await setPolicy(['10.199.77.0/24:8080']);
  assert.equal(await tcp(a.netnsPath, PRIVATE_ECHO.address, PRIVATE_ECHO.port), 'connected');
  assert.equal(await reaches(a.netnsPath, WEB, 80), false);
  assert.equal(await tcp(a.netnsPath, WEB, 7001), 'failed');
});

test('allowlist: a CIDR (nested rules merged) opens every address in it', async () => {
  await setPolicy(['203.0.113.0/24', '203.0.113.10:443', '198.51.100.0/24:8080-8081']);
  assert.equal(await tcp(a.netnsPath, WEB, 443), 'connected');
  assert.equal(await tcp(a.netnsPath, CDN, 80), 'connected');
  assert.equal(await tcp(a.netnsPath, ECHO.address, ECHO.port), 'connected');
  assert.equal(await tcp(a.netnsPath, DNS, 53 + 1000), 'failed');
});

test('deny-all: nothing reaches the fake internet (TCP, UDP, ICMP, any port, private ranges), every name is NXDOMAIN and never asked upstream', async () => {
  await egress.enforcer.apply('sbx_a', 0, DENY_ALL_EGRESS_POLICY);
  assert.deepEqual(await openings(a.slotAddress), [], 'no set element opens anything to the slot');
  await rig.flush();
  rig.clearEvents();
  for (const [address, port] of [[ECHO.address, ECHO.port], [WEB, 7001], [CDN, 7001], [PRIVATE_ECHO.address, PRIVATE_ECHO.port], [DNS, 853]] as const) {
    assert.equal(await tcp(a.netnsPath, address, port), 'failed', `${address}:${port}`);
  }
  // Ports 80 and 443 end at the host's SNI/Host proxy, which refuses (HTTP: 403), never at the rig.
  assert.equal((await probeFrom(a.netnsPath, { kind: 'http', address: WEB, host: 'www.example.com', timeoutMs: 2000 })).status, 403);
  await tcp(a.netnsPath, WEB, 443);
  await probeFrom(a.netnsPath, { kind: 'udp', address: ECHO.address, port: ECHO.port, payload: 'x' });
  assert.equal(await pingFrom(a.netnsPath, WEB), 'timeout');
  for (const transport of ['udp', 'tcp'] as const) {
    for (const name of ['www.example.com', 'cdn.example.net']) {
      assert.equal((await dns(name, { transport })).rcode, 'NXDOMAIN', `${name} over ${transport}`);
      assert.equal((await dns(name, { server: rig.dns.address, transport })).rcode, 'NXDOMAIN', `${name} over ${transport}, sent to another resolver`);
    }
  }
  assert.deepEqual(await upstreamNames(), [], 'no name was asked upstream');
  assert.deepEqual(rig.events().filter((e) => e.kind !== 'dns-query'), [], 'no connection or request reached the rig');
  assert.deepEqual(await openings(a.slotAddress), [], 'still nothing opened (no DNS grant)');
  // The open slot next to it is unaffected.
  assert.equal(await tcp(b.netnsPath, ECHO.address, ECHO.port), 'connected');
});

test('replacing the policy cuts a long-lived connection to a destination no longer allowed', async () => {
  await setPolicy([`${ECHO.address}:${ECHO.port}`]);
  const script = `const s=require('net').connect(+process.argv[2],process.argv[1]);s.on('connect',()=>setInterval(()=>s.write('x'),100));
s.on('data',(d)=>console.log('echo '+d.length));s.on('error',()=>{});setTimeout(()=>process.exit(0),6000);`;
  const child = spawn('nsenter', [`--net=${a.netnsPath}`, process.execPath, '-e', script, ECHO.address, String(ECHO.port)], { stdio: ['ignore', 'pipe', 'ignore'] });
  let echoes = 0;
  createInterface({ input: child.stdout! }).on('line', () => echoes++);
  try {
    while (echoes < 3) await sleep(50);
    await setPolicy([WEB]);
    await sleep(1000);
    const atCut = echoes;
    await sleep(1000);
    assert.equal(echoes, atCut, 'no echo arrives once the rule is gone');
  } finally {
    child.kill('SIGKILL');
  }
});

test('a packet from a slot veth with another source address is dropped (anti-spoofing)', async () => {
  await setPolicy([]);
  const router = network.names(0).routerNs;
  const uplink = network.names(0).uplinkVeth;
  const spoofed = slotAddresses(layout, 2).slotAddress;
  await runChecked(['ip', '-n', router, 'addr', 'add', `${spoofed}/32`, 'dev', uplink]);
  try {
    assert.equal(await tcp(`/var/run/netns/${router}`, ECHO.address, ECHO.port), 'connected');
    assert.equal(await tcp(`/var/run/netns/${router}`, ECHO.address, ECHO.port, spoofed), 'failed');
  } finally {
    await run(['ip', '-n', router, 'addr', 'del', `${spoofed}/32`, 'dev', uplink]);
  }
});

test('DNS: an allowed name resolves and is then reachable; a denied name is NXDOMAIN, never asked upstream, and its address stays closed', async () => {
  await setPolicy(['www.example.com']);
  assert.equal(await tcp(a.netnsPath, WEB, 7001), 'failed', 'closed before resolving');
  const ok = await dns('www.example.com');
  assert.deepEqual([ok.rcode, ok.answers.map((x) => x.data)], ['NOERROR', [WEB]]);
  assert.equal(await tcp(a.netnsPath, WEB, 7001), 'connected');
  assert.equal(await tcp(a.netnsPath, WEB, 7002), 'connected', 'a host rule without port opens every port');
  const denied = await dns('cdn.example.net');
  assert.equal(denied.rcode, 'NXDOMAIN');
  assert.deepEqual(await upstreamNames(), ['www.example.com']);
  assert.equal(await tcp(a.netnsPath, CDN, 7001), 'failed', 'the hard-coded address of a denied name');
  assert.equal(await reaches(a.netnsPath, CDN, 80), false, 'the same on a proxied port');
});

test('DNS: a host rule with a port opens only that port of the answered address', async () => {
  await setPolicy(['api.example.com:7002']);
  assert.equal((await dns('api.example.com')).rcode, 'NOERROR');
  assert.equal(await tcp(a.netnsPath, WEB, 7002), 'connected');
  assert.equal(await tcp(a.netnsPath, WEB, 7001), 'failed');
});

test('DNS: queries to another resolver (UDP and TCP) are answered by ours', async () => {
  await setPolicy(['www.example.com']);
  for (const transport of ['udp', 'tcp'] as const) {
    const denied = await dns('cdn.example.net', { server: rig.dns.address, transport });
    assert.equal(denied.rcode, 'NXDOMAIN', transport);
    const ok = await dns('www.example.com', { server: '192.0.2.1', transport });
    assert.equal(ok.rcode, 'NOERROR', transport);
  }
  const asked = await upstreamNames();
  assert.ok(!asked.includes('cdn.example.net'), 'the denied name never reached the rig');
  // The rig only ever sees queries from the host (our resolver), never from the slot's address.
  await rig.flush();
  assert.ok(rig.events('dns-query').every((q) => q.remote !== a.slotAddress));
});

test('a removed policy grant stops a resolved address when the name is no longer allowed', async () => {
  await setPolicy(['www.example.com']);
  await dns('www.example.com');
  assert.equal(await tcp(a.netnsPath, WEB, 7001), 'connected');
  await setPolicy(['cdn.example.net']);
  assert.equal(await tcp(a.netnsPath, WEB, 7001), 'failed');
});

test('remove() closes the slot; a re-installed table after an outside flush keeps every policy', async () => {
  await setPolicy([`${WEB}:80`]);
  // Not asserted gone in between: the watchdog hears of the deletion (nft monitor) and may already be back.
  await runChecked(['nft', 'delete', 'table', 'inet', PREFIX]);
  const deadline = Date.now() + 5000;
  while (!(await egress.enforcer.isInstalled()) && Date.now() < deadline) await sleep(100);
  assert.equal(await egress.enforcer.isInstalled(), true, 'the watchdog re-installed the table');
  assert.equal(await reaches(a.netnsPath, WEB, 80), true);
  assert.equal(await reaches(a.netnsPath, WEB, 443), false);
  await egress.enforcer.remove(0);
  assert.equal(await tcp(a.netnsPath, WEB, 80), 'failed');
  assert.equal((await dns('www.example.com')).rcode, 'TIMEOUT', 'an unknown slot cannot even reach the resolver');
  await egress.enforcer.reapplyAll([{ sandboxId: 'sbx_a', slot: 0, policy: parseEgressPolicy([]) }, { sandboxId: 'sbx_b', slot: 1, policy: parseEgressPolicy([]) }]);
  assert.equal(await tcp(a.netnsPath, CDN, 80), 'connected');
});


test('applies made together (a fork\'s children) share a transaction; each slot ends with its own policy, the later of two for one slot', async () => {
  const slots = [2, 3, 4, 5];
  const address = (slot: number): string => slotAddresses(layout, slot).slotAddress;
  try {
    await Promise.all([
      ...slots.map((slot) => egress.enforcer.apply(`sbx_batch${slot}`, slot, parseEgressPolicy(slot % 2 === 0 ? [] : [`${ECHO.address}`]))),
      // The same slot again, right behind: it must win (applied after the first, not beside it).
      egress.enforcer.apply('sbx_batch2', 2, DENY_ALL_EGRESS_POLICY),
    ]);
    assert.deepEqual(await openings(address(2)), [], 'deny-all, the later policy of slot 2');
    assert.deepEqual(await openings(address(3)), ['net']);
    assert.deepEqual(await openings(address(4)), ['open']);
    assert.deepEqual(await openings(address(5)), ['net']);
  } finally {
    for (const slot of slots) await egress.enforcer.remove(slot);
  }
  for (const slot of slots) assert.deepEqual(await openings(address(slot)), []);
});
