import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEgressPolicy, type EgressVerdict, type NetworkAttachment } from '@ramify/core';
import { run } from '../exec.js';
import { NamespaceNetwork } from '../namespace-network.js';
import { DNS_SERVICE_ADDRESS, layoutForPrefix } from '../slots.js';
import { queryDnsFrom } from '../testing/dns-query.js';
import { FakeInternet } from '../testing/fake-internet.js';
import { pingFrom, probeFrom } from '../testing/net-probe.js';
import { startHostEgress, type HostEgress, type HostEgressErrorSource } from './host-egress.js';

// Verdict events for the egress log, from real parts: two "sandboxes" (NamespaceNetwork slots, prefix
// `rxd`), the fake internet (prefix `rxdi`, addresses of its own), ulogd reading the table's NFLOG group.
const PREFIX = 'rxd';
const WEB = '203.0.113.181'; // serves web.test and blocked.test
const ECHO = '198.51.100.182'; // TCP echo on 8080
const PINGED = '198.51.100.183'; // answers ICMP (an echo server address)
const DNS = '198.51.100.185';
const ULOGD = ['/usr/sbin/ulogd', '/usr/local/sbin/ulogd', '/sbin/ulogd'].some((p) => existsSync(p));
const noUlogd = ULOGD ? false : 'ulogd is not installed (apt-get install ulogd2 ulogd2-json)';
const noPing = noUlogd || (existsSync('/usr/bin/python3') ? false : 'python3 (for raw ICMP) is not installed');

let runDir: string;
let rig: FakeInternet;
let egress: HostEgress;
let network: NamespaceNetwork;
let v: NetworkAttachment;
let w: NetworkAttachment;
const verdicts: EgressVerdict[] = [];
const errors: Array<{ source: HostEgressErrorSource; error: unknown }> = [];
const RULES_V = [`${ECHO}:8080`, `${ECHO}:9999`, PINGED, 'web.test'];

function start(nflog: { ulogdPath?: string } = {}): Promise<HostEgress> {
  return startHostEgress({
    prefix: PREFIX,
    layout: layoutForPrefix(PREFIX),
    upstreams: [{ address: DNS }],
    nflog: { runDir, ...nflog },
    onVerdict: (x) => verdicts.push(x),
    onError: (error, source) => errors.push({ source, error }),
  });
}

before(async () => {
  await new NamespaceNetwork({ prefix: PREFIX }).destroyAll();
  runDir = await mkdtemp(join(tmpdir(), 'rxd-nflog-'));
  rig = await FakeInternet.start({
    prefix: 'rxdi',
    web: [{ address: WEB, names: ['web.test', 'blocked.test'] }],
    echo: [{ address: ECHO, port: 8080 }, { address: PINGED, port: 7 }],
    dns: { address: DNS },
    zone: { 'web.test': { a: [WEB] }, 'blocked.test': { a: [WEB] } },
  });
  egress = await start();
  network = new NamespaceNetwork({ prefix: PREFIX, hostFirewall: egress.enforcer });
  v = await network.attach('sbx_v', 0);
  w = await network.attach('sbx_w', 1);
  await egress.enforcer.apply('sbx_v', 0, parseEgressPolicy(RULES_V));
  await egress.enforcer.apply('sbx_w', 1, parseEgressPolicy([PINGED]));
});

after(async () => {
  await egress?.close();
  await network?.destroyAll();
  await rig?.teardown();
  if (runDir) await rm(runDir, { recursive: true, force: true });
  assert.notEqual((await run(['nft', 'list', 'table', 'inet', PREFIX])).code, 0, 'the table is gone');
});

beforeEach(() => {
  verdicts.length = 0;
});

/** The first verdict matching `predicate`, waiting for it to arrive (5 s at most). */
async function verdict(predicate: (x: EgressVerdict) => boolean): Promise<EgressVerdict> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const found = verdicts.find(predicate);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no matching verdict; got ${JSON.stringify(verdicts, null, 1)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A verdict without its time, for deepEqual. */
const shape = ({ at, ...rest }: EgressVerdict): Omit<EgressVerdict, 'at'> => {
  assert.ok(!Number.isNaN(Date.parse(at)), `at is an ISO time: ${at}`);
  return rest;
};

test('tcp: allowed and denied connections, with the rule that matched and the right sandbox', { skip: noUlogd }, async () => {
  assert.equal((await probeFrom(v.netnsPath, { kind: 'tcp', address: ECHO, port: 8080 })).outcome, 'ok');
  assert.equal((await probeFrom(v.netnsPath, { kind: 'tcp', address: ECHO, port: 8081, timeoutMs: 800 })).outcome, 'failed');
  assert.equal((await probeFrom(w.netnsPath, { kind: 'tcp', address: ECHO, port: 8080, timeoutMs: 800 })).outcome, 'failed');
  const base = { protocol: 'tcp', destination: ECHO, name: null } as const;
  assert.deepEqual(shape(await verdict((x) => x.port === 8080 && x.sandboxId === 'sbx_v')), { ...base, sandboxId: 'sbx_v', port: 8080, verdict: 'allowed', rule: `${ECHO}:8080` });
  assert.deepEqual(shape(await verdict((x) => x.port === 8081)), { ...base, sandboxId: 'sbx_v', port: 8081, verdict: 'denied', rule: null });
  assert.deepEqual(shape(await verdict((x) => x.port === 8080 && x.sandboxId === 'sbx_w')), { ...base, sandboxId: 'sbx_w', port: 8080, verdict: 'denied', rule: null });
  assert.equal(verdicts.filter((x) => x.port === 8081).length, 1, 'SYN retransmissions are reported once');
});

test('udp: allowed and denied', { skip: noUlogd }, async () => {
  await probeFrom(v.netnsPath, { kind: 'udp', address: ECHO, port: 9999 });
  await probeFrom(v.netnsPath, { kind: 'udp', address: ECHO, port: 9998 });
  const udp = { sandboxId: 'sbx_v', protocol: 'udp', destination: ECHO, name: null } as const;
  assert.deepEqual(shape(await verdict((x) => x.protocol === 'udp' && x.port === 9999)), { ...udp, port: 9999, verdict: 'allowed', rule: `${ECHO}:9999` });
  assert.deepEqual(shape(await verdict((x) => x.protocol === 'udp' && x.port === 9998)), { ...udp, port: 9998, verdict: 'denied', rule: null });
});

test('icmp: allowed and denied', { skip: noPing }, async () => {
  assert.equal(await pingFrom(v.netnsPath, PINGED), 'reply');
  assert.equal(await pingFrom(v.netnsPath, WEB, { timeoutMs: 500 }), 'timeout');
  const icmp = { sandboxId: 'sbx_v', protocol: 'icmp', port: null, name: null } as const;
  assert.deepEqual(shape(await verdict((x) => x.protocol === 'icmp' && x.destination === PINGED)), { ...icmp, destination: PINGED, verdict: 'allowed', rule: PINGED });
  assert.deepEqual(shape(await verdict((x) => x.protocol === 'icmp' && x.destination === WEB)), { ...icmp, destination: WEB, verdict: 'denied', rule: null });
});

test('dns: answered and denied names; a connection to a learned address carries the name and its rule', { skip: noUlogd }, async () => {
  const [ok, denied] = await queryDnsFrom(v.netnsPath, [{ name: 'web.test' }, { name: 'blocked.test' }], { server: DNS_SERVICE_ADDRESS });
  assert.deepEqual([ok!.rcode, denied!.rcode], ['NOERROR', 'NXDOMAIN']);
  const dns = { sandboxId: 'sbx_v', protocol: 'dns', port: null } as const;
  assert.deepEqual(shape(await verdict((x) => x.protocol === 'dns' && x.verdict === 'allowed')), { ...dns, destination: WEB, name: 'web.test', verdict: 'allowed', rule: 'web.test' });
  assert.deepEqual(shape(await verdict((x) => x.protocol === 'dns' && x.verdict === 'denied')), { ...dns, destination: '', name: 'blocked.test', verdict: 'denied', rule: null });
  await probeFrom(v.netnsPath, { kind: 'tcp', address: WEB, port: 8443, timeoutMs: 800 }); // refused by the rig, but allowed out
  assert.deepEqual(shape(await verdict((x) => x.protocol === 'tcp' && x.port === 8443)), {
    sandboxId: 'sbx_v', protocol: 'tcp', destination: WEB, port: 8443, name: 'web.test', verdict: 'allowed', rule: 'web.test',
  });
});

test('proxy: allowed and denied Host/SNI with the name, the rule and the address dialed', { skip: noUlogd }, async () => {
  assert.equal((await probeFrom(v.netnsPath, { kind: 'http', address: WEB, host: 'web.test' })).status, 200);
  assert.equal((await probeFrom(v.netnsPath, { kind: 'http', address: WEB, host: 'blocked.test' })).status, 403);
  assert.equal((await probeFrom(v.netnsPath, { kind: 'https', address: ECHO, host: 'blocked.test', servername: 'blocked.test', ca: rig.certPem })).outcome, 'failed');
  const tcp = { sandboxId: 'sbx_v', protocol: 'tcp' } as const;
  assert.deepEqual(shape(await verdict((x) => x.name === 'web.test' && x.port === 80)), { ...tcp, destination: WEB, port: 80, name: 'web.test', verdict: 'allowed', rule: 'web.test' });
  assert.deepEqual(shape(await verdict((x) => x.name === 'blocked.test' && x.port === 80)), { ...tcp, destination: WEB, port: 80, name: 'blocked.test', verdict: 'denied', rule: null });
  assert.deepEqual(shape(await verdict((x) => x.name === 'blocked.test' && x.port === 443)), { ...tcp, destination: ECHO, port: 443, name: 'blocked.test', verdict: 'denied', rule: null });
  assert.equal(verdicts.filter((x) => x.port === 80 || x.port === 443).length, 3, 'a proxied connection is reported by the proxy only');
});

test('open egress: allowed with no rule', { skip: noUlogd }, async () => {
  await egress.enforcer.apply('sbx_w', 1, parseEgressPolicy([]));
  try {
    assert.equal((await probeFrom(w.netnsPath, { kind: 'tcp', address: ECHO, port: 8080 })).outcome, 'ok');
    assert.deepEqual(shape(await verdict((x) => x.sandboxId === 'sbx_w')), { sandboxId: 'sbx_w', protocol: 'tcp', destination: ECHO, port: 8080, name: null, verdict: 'allowed', rule: null });
  } finally {
    await egress.enforcer.apply('sbx_w', 1, parseEgressPolicy([PINGED]));
  }
});

test('close() stops ulogd; without ulogd the daemon starts, warns, and reports resolver and proxy verdicts', async () => {
  const pid = egress.nflog?.pid ?? null;
  assert.equal(pid !== null, ULOGD);
  await egress.close();
  if (pid !== null) assert.equal(existsSync(`/proc/${pid}/cmdline`) && !/ Z /.test(await procStat(pid)), false, 'ulogd is gone');
  errors.length = 0;
  egress = await start({ ulogdPath: '/nonexistent/ulogd' });
  assert.equal(egress.nflog, null);
  assert.deepEqual(errors.map((e) => e.source), ['nflog']);
  await egress.enforcer.reapplyAll([{ sandboxId: 'sbx_v', slot: 0, policy: parseEgressPolicy(RULES_V) }, { sandboxId: 'sbx_w', slot: 1, policy: parseEgressPolicy([PINGED]) }]);
  await queryDnsFrom(v.netnsPath, [{ name: 'blocked.test' }], { server: DNS_SERVICE_ADDRESS });
  assert.equal((await verdict((x) => x.protocol === 'dns')).name, 'blocked.test');
  assert.equal((await probeFrom(v.netnsPath, { kind: 'http', address: WEB, host: 'blocked.test' })).status, 403);
  assert.deepEqual(shape(await verdict((x) => x.protocol === 'tcp')), { sandboxId: 'sbx_v', protocol: 'tcp', destination: '', port: 80, name: 'blocked.test', verdict: 'denied', rule: null });
});

const procStat = (pid: number): Promise<string> => readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
