import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { FakeInternet } from '../../testing/fake-internet.js';
import { DEFAULT_FAKE_ZONE } from '../../testing/fake-internet-defaults.js';
import { queryDnsFrom, type DnsQueryOptions, type DnsQuestionSpec } from '../../testing/dns-query.js';
import type { VethNamespace } from '../../testing/veth-namespace.js';
import { PolicyDnsResolver } from './dns-resolver.js';
import type { DnsAnswerEvent, DnsDeniedEvent, DnsDroppedAddressesEvent, DnsFailedEvent, DnsSandboxPolicy } from './dns-resolver-types.js';

// The resolver runs in this (host) process on the host side of the sandbox client's link; the client
// (`sandbox`) and a stranger send real queries from their own namespaces; upstream is the rig's
// scripted DNS server. Test-only prefix `rmqb`; everything is removed in `after`.
const UPSTREAM = '198.51.100.54';
const zone = {
  ...DEFAULT_FAKE_ZONE,
  'secret.example.org': { a: ['203.0.113.99'] },
  'hookfail.example.com': { a: ['203.0.113.10'] },
  'hookhang.example.com': { a: ['203.0.113.10'] },
};

let rig: FakeInternet;
let sandbox: VethNamespace;
let stranger: VethNamespace;
let resolver: PolicyDnsResolver;
let answers: Array<DnsAnswerEvent & { doneAt: number }> = [];
let denied: DnsDeniedEvent[] = [];
let dropped: DnsDroppedAddressesEvent[] = [];
let failed: DnsFailedEvent[] = [];
/** The hook's stand-in for adding set elements. */
let hookDelayMs = 50;

const policy: DnsSandboxPolicy = {
  sandboxId: 'sbx_1',
  allow: (name) => (name.endsWith('.example.com') || name.endsWith('.example.net') ? { allowed: true, rule: '*.example.com' } : { allowed: false, rule: null }),
};

async function onAnswer(event: DnsAnswerEvent): Promise<void> {
  if (event.name === 'hookfail.example.com') throw new Error('nft refused the element');
  const delayMs = event.name === 'hookhang.example.com' ? 5000 : hookDelayMs;
  if (delayMs > 0) await sleep(delayMs);
  answers.push({ ...event, doneAt: Date.now() });
}

before(async () => {
  rig = await FakeInternet.start({ prefix: 'rmqb', web: [], echo: [], dns: { address: UPSTREAM }, zone });
  sandbox = await rig.addClient('sbx');
  stranger = await rig.addClient('other');
  resolver = new PolicyDnsResolver({
    listenAddress: sandbox.hostAddress,
    upstreams: [{ address: UPSTREAM }],
    sandboxForSource: (address) => (address === sandbox.address ? policy : null),
    onAnswer,
    onDenied: (e) => denied.push(e),
    onAddressesDropped: (e) => dropped.push(e),
    onFailed: (e) => failed.push(e),
    upstreamTimeoutMs: 1000,
    queryTimeoutMs: 1500,
  });
  await resolver.start();
});
after(async () => {
  await resolver?.close();
  await rig?.teardown();
});
beforeEach(() => {
  rig.clearEvents();
  answers = [];
  denied = [];
  dropped = [];
  failed = [];
});

const ask = (from: VethNamespace, questions: DnsQuestionSpec[], options: Partial<DnsQueryOptions> = {}) =>
  queryDnsFrom(from.netnsPath, questions, { server: sandbox.hostAddress, ...options });

/** Names the upstream was asked for, after every logged query is in. */
async function upstreamSaw(): Promise<string[]> {
  await rig.flush();
  return rig.events('dns-query').map((q) => `${q.name} ${q.type} ${q.transport}`);
}

test('an allowed name is answered with its addresses, and onAnswer finished before the reply arrived', async () => {
  const [r] = await ask(sandbox, [{ name: 'WWW.Example.com' }]);
  assert.equal(r!.rcode, 'NOERROR');
  assert.deepEqual(r!.answers.map((a) => [a.type, a.data]), [['A', '203.0.113.10']]);
  assert.equal(answers.length, 1);
  const { doneAt, ...event } = answers[0]!;
  assert.deepEqual(event, { sandboxId: 'sbx_1', name: 'www.example.com', addresses: ['203.0.113.10'], ttlSeconds: 300, rule: '*.example.com' });
  assert.ok(doneAt <= r!.receivedAt, 'the hook completed before the client had its answer');
  assert.deepEqual(await upstreamSaw(), ['www.example.com A udp']);
});

test('a CNAME chain is returned whole; the addresses are reported under the asked name', async () => {
  const [r] = await ask(sandbox, [{ name: 'alias.example.com' }]);
  assert.deepEqual(r!.answers.map((a) => [a.type, a.data]), [['CNAME', 'www.example.com'], ['A', '203.0.113.10']]);
  assert.deepEqual(answers.map((a) => [a.name, a.addresses, a.ttlSeconds]), [['alias.example.com', ['203.0.113.10'], 300]]);
});

test('a denied name is NXDOMAIN, reported, and never asked upstream (any type)', async () => {
  const rs = await ask(sandbox, [{ name: 'secret.example.org' }, { name: 'secret.example.org', type: 'TXT' }, { name: 'secret.example.org', type: 'AAAA' }]);
  assert.deepEqual(rs.map((r) => r.rcode), ['NXDOMAIN', 'NXDOMAIN', 'NXDOMAIN']);
  assert.deepEqual(denied, [
    { sandboxId: 'sbx_1', name: 'secret.example.org', qtype: 'A' },
    { sandboxId: 'sbx_1', name: 'secret.example.org', qtype: 'TXT' },
    { sandboxId: 'sbx_1', name: 'secret.example.org', qtype: 'AAAA' },
  ]);
  assert.deepEqual(await upstreamSaw(), []);
  assert.equal(answers.length, 0);
});

test('private, loopback, link-local, metadata and CGNAT addresses are dropped; documentation ranges pass', async () => {
  const [priv, mixed, doc] = await ask(sandbox, [{ name: 'private.example.com' }, { name: 'mixed.example.com' }, { name: 'doc.example.com' }]);
  assert.equal(priv!.rcode, 'NOERROR');
  assert.deepEqual(priv!.answers, []);
  assert.deepEqual(mixed!.answers.map((a) => a.data), ['203.0.113.10']);
  assert.deepEqual(doc!.answers.map((a) => a.data), ['192.0.2.10', '198.51.100.7', '203.0.113.5']);
  assert.deepEqual(answers.map((a) => [a.name, a.addresses]), [
    ['mixed.example.com', ['203.0.113.10']],
    ['doc.example.com', ['192.0.2.10', '198.51.100.7', '203.0.113.5']],
  ]);
  assert.deepEqual(dropped.map((d) => [d.name, d.addresses.length]), [['private.example.com', 7], ['mixed.example.com', 2]]);
});

test('AAAA, HTTPS and SVCB are answered empty without asking upstream; AAAA records in an upstream A answer are stripped', async () => {
  const rs = await ask(sandbox, [{ name: 'dual.example.com', type: 'AAAA' }, { name: 'dual.example.com', type: 'UNKNOWN_65' }, { name: 'dual.example.com', type: 'UNKNOWN_64' }]);
  assert.deepEqual(rs.map((r) => [r.rcode, r.answers.length]), [['NOERROR', 0], ['NOERROR', 0], ['NOERROR', 0]]);
  assert.deepEqual(await upstreamSaw(), []);
  const [a] = await ask(sandbox, [{ name: 'dual.example.com' }]);
  assert.deepEqual(a!.answers.map((x) => [x.type, x.data]), [['A', '203.0.113.10']]);
  assert.deepEqual(await upstreamSaw(), ['dual.example.com A udp']);
});

test('queries over TCP work, and a truncated upstream answer is fetched again over TCP', async () => {
  const [tcp] = await ask(sandbox, [{ name: 'www.example.com' }], { transport: 'tcp' });
  assert.deepEqual(tcp!.answers.map((a) => a.data), ['203.0.113.10']);
  const before = resolver.stats().tcpFallbacks;
  // 30 addresses: too big for a plain 512-byte UDP reply (TC set, the client retries over TCP), fine with EDNS.
  const [plain] = await ask(sandbox, [{ name: 'big.example.com' }]);
  assert.equal(plain!.truncated, true);
  assert.equal(plain!.answers.length, 0);
  const [edns] = await ask(sandbox, [{ name: 'big.example.com' }], { edns: true });
  assert.equal(edns!.answers.length, 30);
  const [overTcp] = await ask(sandbox, [{ name: 'big.example.com' }], { transport: 'tcp' });
  assert.equal(overTcp!.answers.length, 30);
  assert.equal(resolver.stats().tcpFallbacks - before, 3);
  assert.deepEqual((await upstreamSaw()).filter((q) => q.startsWith('big.')), Array(3).fill(['big.example.com A udp', 'big.example.com A tcp']).flat());
});

test('TTLs are clamped: the hook and the records get at most the clamped TTL', async () => {
  const [short, long] = await ask(sandbox, [{ name: 'short.example.com' }, { name: 'long.example.com' }]);
  assert.deepEqual(short!.answers.map((a) => a.ttl), [1]);
  assert.deepEqual(long!.answers.map((a) => a.ttl), [3600]);
  assert.deepEqual(answers.map((a) => [a.name, a.ttlSeconds]), [['short.example.com', 30], ['long.example.com', 3600]]);
});

test('fail closed: a throwing hook, a hook past the deadline, a failing or silent upstream are SERVFAIL', async () => {
  const rs = await ask(sandbox, [{ name: 'hookfail.example.com' }, { name: 'hookhang.example.com' }, { name: 'broken.example.com' }, { name: 'slow.example.com' }]);
  assert.deepEqual(rs.map((r) => [r.name, r.rcode, r.answers.length]), [
    ['hookfail.example.com', 'SERVFAIL', 0],
    ['hookhang.example.com', 'SERVFAIL', 0],
    ['broken.example.com', 'SERVFAIL', 0],
    ['slow.example.com', 'SERVFAIL', 0],
  ]);
  const failure = (name: string): DnsFailedEvent => ({ sandboxId: 'sbx_1', name, qtype: 'A', rcode: 'SERVFAIL', rule: '*.example.com' });
  assert.deepEqual(failed, ['hookfail.example.com', 'hookhang.example.com', 'broken.example.com', 'slow.example.com'].map(failure), 'each reported as a failed lookup');
  assert.deepEqual(denied, [], 'not as denied: the policy allowed them');
});

test('an allowed name the upstream does not know is NXDOMAIN, reported as a failed lookup with the rule that allowed it', async () => {
  const [r] = await ask(sandbox, [{ name: 'nosuch.example.com' }]);
  assert.equal(r!.rcode, 'NXDOMAIN');
  assert.deepEqual(failed, [{ sandboxId: 'sbx_1', name: 'nosuch.example.com', qtype: 'A', rcode: 'NXDOMAIN', rule: '*.example.com' }]);
  assert.deepEqual(answers, []);
});

test('a name that is not a plain hostname is FORMERR, reported as denied, never asked upstream', async () => {
  const [r] = await ask(sandbox, [{ name: 'bad!name.example.com' }]);
  assert.equal(r!.rcode, 'FORMERR');
  assert.deepEqual(denied, [{ sandboxId: 'sbx_1', name: 'bad!name.example.com', qtype: 'A' }]);
  assert.deepEqual(await upstreamSaw(), []);
});

test('a source that is no known sandbox is REFUSED and nothing is asked upstream', async () => {
  const rs = await ask(stranger, [{ name: 'www.example.com' }, { name: 'www.example.com' }], {});
  assert.deepEqual(rs.map((r) => r.rcode), ['REFUSED', 'REFUSED']);
  const [tcp] = await ask(stranger, [{ name: 'www.example.com' }], { transport: 'tcp' });
  assert.equal(tcp!.rcode, 'REFUSED');
  assert.deepEqual(await upstreamSaw(), []);
});

test('beyond maxInFlight forwarded queries, a query is SERVFAIL at once', async () => {
  const small = new PolicyDnsResolver({
    listenAddress: stranger.hostAddress,
    upstreams: [{ address: UPSTREAM }],
    sandboxForSource: () => policy,
    onAnswer: () => undefined,
    maxInFlight: 1,
    upstreamTimeoutMs: 6000,
    queryTimeoutMs: 6000,
  });
  await small.start();
  try {
    const slow = ask(sandbox, [{ name: 'slow.example.com' }], { server: stranger.hostAddress, timeoutMs: 8000 });
    await rig.waitForEvent((e) => e.kind === 'dns-query' && e.name === 'slow.example.com');
    const [second] = await ask(sandbox, [{ name: 'www.example.com' }], { server: stranger.hostAddress });
    assert.equal(second!.rcode, 'SERVFAIL');
    assert.equal(small.stats().overloaded, 1);
    const [first] = await slow;
    assert.equal(first!.rcode, 'NOERROR');
  } finally {
    await small.close();
  }
});

test('latency added by the resolver (printed, not asserted)', async (t) => {
  const count = 200;
  const questions = Array.from({ length: count }, () => ({ name: 'www.example.com' }));
  const direct = await ask(sandbox, questions, { server: UPSTREAM });
  hookDelayMs = 0;
  resolver.resetStats();
  const via = await ask(sandbox, questions).finally(() => (hookDelayMs = 50));
  assert.ok(via.every((r) => r.rcode === 'NOERROR') && direct.every((r) => r.rcode === 'NOERROR'));
  const pct = (xs: number[], p: number): string => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!.toFixed(3);
  const d = direct.map((r) => r.latencyMs);
  const v = via.map((r) => r.latencyMs);
  const s = resolver.stats();
  const per = (ms: number): string => (ms / s.queries).toFixed(3);
  t.diagnostic(`dns latency over ${count} sequential UDP queries from a client namespace (no-op hook)`);
  t.diagnostic(`  direct to upstream: p50 ${pct(d, 50)} ms, p95 ${pct(d, 95)} ms`);
  t.diagnostic(`  via resolver:       p50 ${pct(v, 50)} ms, p95 ${pct(v, 95)} ms`);
  t.diagnostic(`  resolver per query: total ${per(s.totalMs)} ms = upstream ${per(s.upstreamMs)} + hook ${per(s.hookMs)} + own ${per(s.ownMs)}`);
});
