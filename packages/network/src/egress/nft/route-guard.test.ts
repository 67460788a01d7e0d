import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { parseEgressPolicy, type NetworkAttachment } from '@ramify/core';
import { run, runChecked } from '../../exec.js';
import { NamespaceNetwork } from '../../namespace-network.js';
import { DNS_SERVICE_ADDRESS, layoutForPrefix, slotRange } from '../../slots.js';
import { queryDnsFrom } from '../../testing/dns-query.js';
import { FakeInternet } from '../../testing/fake-internet.js';
import { pingFrom, probeFrom } from '../../testing/net-probe.js';
import { startHostEgress, type HostEgress } from '../host-egress.js';
import { SlotPolicies } from '../policy/slot-policies.js';
import { NftEgressEnforcer } from './nft-egress-enforcer.js';
import { installRouteGuard, listRouteGuard } from './route-guard.js';

// Survival of a flushed table while the daemon is down: two "sandboxes" (NamespaceNetwork slots, prefix `rxf`;
// slot 0 allowlist, slot 1 open) and the fake internet (prefix `rxfi`, addresses of its own). The rig counts every
// IPv4 packet that enters it (an nft counter inside its namespace) besides logging connections and DNS queries.
// A second prefix `rxg` (no namespaces) checks that guards of two prefixes are independent. All removed in `after`.
const PREFIX = 'rxf';
const OTHER = 'rxg';
const layout = layoutForPrefix(PREFIX);
const RANGE = slotRange(layout);
const WEB = '203.0.113.131'; // www.guard.test
const ECHO = { address: '198.51.100.137', port: 8080 };
const DNS = '198.51.100.133';
const SPOOFED = '203.0.113.139';
const RULES_A = [`${ECHO.address}`, 'www.guard.test'];

let rig: FakeInternet;
let egress: HostEgress | undefined;
/** The current enforcer (kept after `egress` closes, as the table and the guard outlive the daemon). */
let enforcer: NftEgressEnforcer;
let network: NamespaceNetwork;
/** The network installs through whichever enforcer is current (the test restarts it like a daemon). */
const hostFirewall = { install: () => enforcer.install(), uninstall: () => enforcer.uninstall() };
let a: NetworkAttachment;
let b: NetworkAttachment;

/** Start egress enforcement as a daemon start does: table, guard, watchdog, then every policy re-applied. */
async function startDaemonEgress(): Promise<HostEgress> {
  const started = await startHostEgress({ prefix: PREFIX, layout, upstreams: [{ address: DNS }], watchIntervalMs: 200 });
  egress = started;
  enforcer = started.enforcer;
  await started.enforcer.reapplyAll([
    { sandboxId: 'sbx_a', slot: 0, policy: parseEgressPolicy(RULES_A) },
    { sandboxId: 'sbx_b', slot: 1, policy: parseEgressPolicy([]) },
  ]);
  return started;
}

before(async () => {
  await new NamespaceNetwork({ prefix: PREFIX }).destroyAll();
  await new NamespaceNetwork({ prefix: OTHER }).destroyAll();
  rig = await FakeInternet.start({
    prefix: 'rxfi',
    web: [{ address: WEB, names: ['www.guard.test'] }],
    echo: [ECHO, { address: WEB, port: 7001 }, { address: DNS, port: 7001 }],
    dns: { address: DNS },
    zone: { 'www.guard.test': { a: [WEB] } },
  });
  await runChecked(['nsenter', `--net=${rig.namespace.netnsPath}`, 'nft', '-f', '-'],
    'table inet rxfw {\n  chain pre { type filter hook prerouting priority -500; policy accept;\n    iifname "eth0" meta nfproto ipv4 counter\n  }\n}\n');
  await startDaemonEgress();
  network = new NamespaceNetwork({ prefix: PREFIX, hostFirewall });
  a = await network.attach('sbx_a', 0);
  b = await network.attach('sbx_b', 1);
});

after(async () => {
  await egress?.close();
  await network?.destroyAll();
  await new NamespaceNetwork({ prefix: OTHER }).destroyAll();
  await rig?.teardown();
  assert.notEqual((await run(['nft', 'list', 'table', 'inet', PREFIX])).code, 0, 'the table is gone');
  assert.deepEqual(await listRouteGuard(RANGE), [], 'the guard is gone');
});

/** IPv4 packets that entered the rig so far. */
async function rigPackets(): Promise<number> {
  const r = await runChecked(['nsenter', `--net=${rig.namespace.netnsPath}`, 'nft', 'list', 'chain', 'inet', 'rxfw', 'pre']);
  return Number(/packets (\d+)/.exec(r)?.[1] ?? NaN);
}

const tcp = async (from: NetworkAttachment, address: string, port: number) => (await probeFrom(from.netnsPath, { kind: 'tcp', address, port, timeoutMs: 1500 })).outcome;
const udp = (from: NetworkAttachment, address: string, port: number) => probeFrom(from.netnsPath, { kind: 'udp', address, port });
const ping = (from: NetworkAttachment, address: string) => pingFrom(from.netnsPath, address, { timeoutMs: 1000 });
const dns = async (from: NetworkAttachment, server: string, transport: 'udp' | 'tcp' = 'udp') =>
  (await queryDnsFrom(from.netnsPath, [{ name: 'www.guard.test' }], { server, transport, timeoutMs: 1500 }))[0]!.rcode;

/** One UDP datagram from the sandbox with a source address it added itself (root inside the sandbox). */
async function spoofedUdp(from: NetworkAttachment): Promise<void> {
  await run(['ip', '-n', from.netnsName, 'addr', 'add', `${SPOOFED}/32`, 'dev', 'eth0']);
  const script = `const s=require('dgram').createSocket('udp4');s.bind(0,process.argv[1],()=>s.send('x',53,process.argv[2],()=>s.close()));`;
  try {
    await runChecked(['nsenter', `--net=${from.netnsPath}`, process.execPath, '-e', script, SPOOFED, DNS]);
  } finally {
    await run(['ip', '-n', from.netnsName, 'addr', 'del', `${SPOOFED}/32`, 'dev', 'eth0']);
  }
}

/** Every probe of the survival test, from both slots: TCP, UDP (DNS and plain), ICMP, a spoofed source. */
async function everyProbe(): Promise<Record<string, string>> {
  return {
    'a tcp echo': await tcp(a, ECHO.address, ECHO.port),
    'a udp dns (rig)': await dns(a, DNS),
    'a udp dns (service address)': await dns(a, DNS_SERVICE_ADDRESS),
    'a udp plain': (await udp(a, ECHO.address, 9)).outcome,
    'a icmp': await ping(a, ECHO.address),
    'a spoofed udp': (await spoofedUdp(a), 'sent'),
    'b tcp web': await tcp(b, WEB, 80),
    'b tcp dns (rig)': await dns(b, DNS, 'tcp'),
    'b udp dns (rig)': await dns(b, DNS),
    'b udp plain': (await udp(b, WEB, 9)).outcome,
    'b icmp': await ping(b, WEB),
  };
}

test('with the table installed, allowed traffic passes and denied traffic is dropped (the guard changes nothing)', async () => {
  assert.equal(await tcp(a, ECHO.address, ECHO.port), 'ok');
  assert.equal(await ping(a, ECHO.address), 'reply');
  assert.equal(await dns(a, DNS_SERVICE_ADDRESS), 'NOERROR', 'DNS over UDP through the policy resolver');
  assert.equal(await dns(a, DNS_SERVICE_ADDRESS, 'tcp'), 'NOERROR', 'DNS over TCP: the host resolver answers a slot (SYN-ACK from the slot range)');
  assert.equal(await tcp(a, WEB, 7001), 'ok', 'allowed by name once resolved');
  assert.equal(await tcp(b, WEB, 80), 'ok');
  assert.equal(await ping(b, WEB), 'reply');
  await rig.flush();
  rig.clearEvents();
  assert.equal(await tcp(a, DNS, 7001), 'failed', 'denied by the allowlist');
  assert.equal(await tcp(b, DNS, 7001), 'ok', 'the same destination is open to the open slot');
  await rig.flush();
  assert.deepEqual(rig.events('connection').map((e) => e.remote), [rig.namespace.hostAddress], 'only the open slot, masqueraded');
});

test('the guard is one rule per prefix however often the table is installed, and is repaired by the watchdog', async () => {
  const guard = await listRouteGuard(RANGE);
  assert.deepEqual(guard.map((r) => [r.priority, r.action ?? r.table]), [[1500, 'main'], [1501, 'prohibit']]);
  await egress!.enforcer.install();
  await egress!.enforcer.install();
  await egress!.enforcer.reapplyAll([{ sandboxId: 'sbx_a', slot: 0, policy: parseEgressPolicy(RULES_A) }, { sandboxId: 'sbx_b', slot: 1, policy: parseEgressPolicy([]) }]);
  await installRouteGuard({ slotRange: RANGE });
  assert.deepEqual(await listRouteGuard(RANGE), guard);
  const shown = await runChecked(['ip', '-4', 'rule', 'show']);
  assert.equal(shown.split('\n').filter((l) => l.includes(`from ${RANGE} fwmark`)).length, 1, shown);
  // A stale rule of another shape is replaced; a deleted one comes back with the watchdog.
  await runChecked(['ip', 'rule', 'add', 'pref', '1501', 'from', RANGE, 'fwmark', '0/0x1', 'prohibit']);
  // Not asserted that this call did the repair: the watchdog, woken by `ip monitor rule` for the deletions
  // of the installs above, may have run first (table-watch.ts).
  await egress!.enforcer.ensureInstalled();
  assert.deepEqual(await listRouteGuard(RANGE), guard);
  await runChecked(['ip', 'rule', 'del', 'pref', '1501', 'from', RANGE]);
  for (let i = 0; i < 100 && !(await egress!.enforcer.isGuardInstalled()); i++) await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(await listRouteGuard(RANGE), guard);
  // Another prefix has its own guard; removing it leaves this one.
  const other = new NftEgressEnforcer({ prefix: OTHER, slots: new SlotPolicies(layoutForPrefix(OTHER)), resolverPort: 1, dnsServiceAddress: DNS_SERVICE_ADDRESS });
  await other.install();
  assert.equal((await listRouteGuard(slotRange(layoutForPrefix(OTHER)))).length, 2);
  await other.uninstall();
  assert.deepEqual(await listRouteGuard(slotRange(layoutForPrefix(OTHER))), []);
  assert.deepEqual(await listRouteGuard(RANGE), guard);
});

test('the daemon down and the table deleted: nothing from an open or an allowlist slot reaches the rig; a restart restores the policies', async () => {
  // The daemon dies: watchdog, resolver and proxy stop; table and guard stay. Then the table goes.
  await egress!.close();
  egress = undefined;
  await runChecked(['nft', 'delete', 'table', 'inet', PREFIX]);
  await rig.flush();
  rig.clearEvents();
  const before = await rigPackets();
  const outcomes = await everyProbe();
  await rig.flush();
  assert.deepEqual(rig.events(), [], 'the rig logged nothing');
  assert.equal(await rigPackets(), before, `not one packet entered the rig (${JSON.stringify(outcomes)})`);
  for (const [probe, outcome] of Object.entries(outcomes)) assert.ok(['failed', 'TIMEOUT', 'timeout', 'sent', 'ok'].includes(outcome), `${probe}: ${outcome}`);
  assert.equal(outcomes['a tcp echo'], 'failed');
  assert.equal(outcomes['b tcp web'], 'failed');
  assert.equal(outcomes['b icmp'], 'timeout');
  assert.equal(outcomes['b udp dns (rig)'], 'TIMEOUT');

  // Control: the same probe without the guard does reach the rig (unmasqueraded, from the slot address).
  await runChecked(['ip', 'rule', 'del', 'pref', '1501', 'from', RANGE]);
  try {
    assert.equal(await tcp(b, WEB, 80), 'ok');
    await rig.flush();
    assert.ok(rig.events('connection').some((e) => e.remote === b.slotAddress), 'without the guard the slot reached the rig');
  } finally {
    await installRouteGuard({ slotRange: RANGE });
  }

  // The daemon starts again: table (and guard, once) installed, every policy re-applied.
  await startDaemonEgress();
  assert.deepEqual((await listRouteGuard(RANGE)).map((r) => r.priority), [1500, 1501]);
  await rig.flush();
  rig.clearEvents();
  assert.equal(await tcp(a, ECHO.address, ECHO.port), 'ok');
  assert.equal(await ping(a, ECHO.address), 'reply');
  assert.equal(await dns(a, DNS_SERVICE_ADDRESS), 'NOERROR');
  assert.equal(await tcp(b, WEB, 80), 'ok');
  assert.equal(await tcp(a, DNS, 7001), 'failed', 'the allowlist still denies');
  await rig.flush();
  assert.ok(rig.events('connection').every((e) => e.remote === rig.namespace.hostAddress), 'masqueraded again');
  assert.ok(!rig.events('connection').some((e) => e.local === DNS));
});

test('the router drops what a sandbox sends from an address it added; an older router table is repaired on attach', async () => {
  const router = `--net=/var/run/netns/${network.names(0).routerNs}`;
  const chain = await runChecked(['nsenter', router, 'nft', 'list', 'chain', 'ip', 'nat', 'antispoof']);
  assert.match(chain, /iifname "rxfg0" ip saddr != 10\.254\.0\.2 drop/);
  // As built by an older version: NAT only.
  await runChecked(['nsenter', router, 'nft', '-f', '-'], 'flush chain ip nat antispoof\ndelete chain ip nat antispoof\n');
  const fresh = new NamespaceNetwork({ prefix: PREFIX, hostFirewall });
  await fresh.attach('sbx_a', 0);
  assert.match(await runChecked(['nsenter', router, 'nft', 'list', 'chain', 'ip', 'nat', 'antispoof']), /ip saddr != 10\.254\.0\.2 drop/);
  assert.equal(await tcp(a, ECHO.address, ECHO.port), 'ok', 'NAT still works after the repair');
});

test('uninstall (destroyAll) removes the table and the guard; an egress-off network removes a leftover guard', async () => {
  const otherRange = slotRange(layoutForPrefix(OTHER));
  await installRouteGuard({ slotRange: otherRange });
  await new NamespaceNetwork({ prefix: OTHER }).destroyAll();
  assert.deepEqual(await listRouteGuard(otherRange), []);
  await egress?.close();
  egress = undefined;
  await network.destroyAll();
  assert.deepEqual(await listRouteGuard(RANGE), []);
  assert.notEqual((await run(['nft', 'list', 'table', 'inet', PREFIX])).code, 0);
  const shown = await runChecked(['ip', '-4', 'rule', 'show']);
  assert.ok(!shown.includes(RANGE), shown);
});
