import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatEgressRule, parseEgressPolicy, type EgressVerdict } from '@ramify/core';
import { DnsReportLimit } from './dns-report-limit.js';
import { EgressVerdicts } from './egress-verdicts.js';
import { parseNflogLine, type NflogPacket } from '../nft/nflog-reader.js';
import { matchConnection } from '../policy/policy-match.js';
import { SlotPolicies } from '../policy/slot-policies.js';
import { DEFAULT_LAYOUT } from '../../slots.js';

const policy = parseEgressPolicy(['*.pkg.test:443', 'www.example.com', '198.51.100.7:8080-8081', '203.0.113.0/24', 'api.example.com:80']);
const match = (facts: Parameters<typeof matchConnection>[1]): string | null => {
  const m = matchConnection(policy, facts);
  return m ? formatEgressRule(m.rule) : null;
};

test('matchConnection: first rule in order; ports are checked; address rules never match names; ICMP only port-less rules', () => {
  assert.equal(match({ port: 443, names: ['a.b.pkg.test'] }), '*.pkg.test:443');
  assert.equal(match({ port: 80, names: ['a.pkg.test'] }), null);
  assert.equal(match({ port: 80, names: ['www.example.com'] }), 'www.example.com');
  assert.equal(match({ port: 443, names: ['api.example.com'] }), null, 'the name rule is for port 80');
  assert.equal(match({ address: '198.51.100.7', port: 8081, names: [] }), '198.51.100.7:8080-8081');
  assert.equal(match({ address: '198.51.100.7', port: 8082, names: [] }), null);
  assert.equal(match({ address: '203.0.113.99', port: null, names: [] }), '203.0.113.0/24');
  assert.equal(match({ address: '198.51.100.7', port: null, names: [] }), null, 'ICMP: a port rule does not match');
  assert.equal(match({ address: '192.0.2.1', port: 80, names: ['api.example.com'] }), 'api.example.com:80');
  assert.equal(matchConnection(parseEgressPolicy(['x.test', '*']), { port: 1, names: [] })?.rule.kind, 'any');
  assert.equal(matchConnection(parseEgressPolicy([]), { port: 1, names: ['x.test'] }), null);
});

test('parseNflogLine keeps only the table prefix; ports only for TCP/UDP; ICMP type and echo id', () => {
  const base = { 'oob.prefix': 'rxz d', 'oob.in': 'rxzh3', src_ip: '10.1.0.14', dest_ip: '203.0.113.5', 'oob.time.sec': 1_700_000_000, 'oob.time.usec': 250_000 };
  const tcp = parseNflogLine(JSON.stringify({ ...base, 'ip.protocol': 6, src_port: 40000, dest_port: 443 }), 'rxz ');
  assert.deepEqual(tcp, {
    kind: 'd', at: new Date(1_700_000_000_250), inInterface: 'rxzh3', protocol: 6, source: '10.1.0.14', destination: '203.0.113.5', sourcePort: 40000, destinationPort: 443, icmp: null,
  });
  const icmp = parseNflogLine(JSON.stringify({ ...base, 'ip.protocol': 1, 'icmp.type': 8, 'icmp.code': 0, 'icmp.echoid': 7, 'icmp.echoseq': 2 }), 'rxz ');
  assert.deepEqual([icmp?.sourcePort, icmp?.icmp], [null, { type: 8, code: 0, id: 7, sequence: 2 }]);
  assert.equal(parseNflogLine(JSON.stringify({ ...base, 'oob.prefix': 'other a' }), 'rxz '), null);
  assert.equal(parseNflogLine(JSON.stringify({ 'oob.prefix': 'rxz a' }), 'rxz '), null, 'not IPv4');
});

test('EgressVerdicts: sandbox by veth (spoofed source too), rule from learned names, repeats of a denied packet once', () => {
  const slots = new SlotPolicies({ ...DEFAULT_LAYOUT, slotBase: '10.1.0.0' }); // slot 3 is 10.1.0.14
  slots.set({ sandboxId: 'sbx_1', slot: 3, policy: parseEgressPolicy(['www.example.com:8443', '198.51.100.7']) });
  slots.learn(3, 'www.example.com', ['203.0.113.5'], Date.now() + 60_000);
  const out: EgressVerdict[] = [];
  const verdicts = new EgressVerdicts({
    prefix: 'rxz',
    slots,
    emit: (v) => out.push(v),
  });
  const packet = (over: Partial<NflogPacket>): NflogPacket => ({
    kind: 'a', at: new Date(0), inInterface: 'rxzh3', protocol: 6, source: '10.1.0.14', destination: '203.0.113.5', sourcePort: 40000, destinationPort: 8443, icmp: null, ...over,
  });
  verdicts.packet(packet({}));
  verdicts.packet(packet({ kind: 'd', destinationPort: 22 }));
  verdicts.packet(packet({ kind: 'd', destinationPort: 22 })); // a retransmission
  verdicts.packet(packet({ kind: 'd', source: '10.9.9.9', destination: '198.51.100.9' })); // spoofed source, same veth
  verdicts.packet(packet({ kind: 'a', protocol: 1, destination: '198.51.100.7', sourcePort: null, destinationPort: null, icmp: { type: 8, code: 0, id: 1, sequence: 1 } }));
  verdicts.packet(packet({ inInterface: 'rxzh4', source: '10.1.0.99' })); // unknown slot
  verdicts.packet(packet({ protocol: 47 })); // GRE: not logged
  assert.deepEqual(out.map(({ at: _at, ...v }) => v), [
    { sandboxId: 'sbx_1', protocol: 'tcp', destination: '203.0.113.5', port: 8443, name: 'www.example.com', verdict: 'allowed', rule: 'www.example.com:8443' },
    { sandboxId: 'sbx_1', protocol: 'tcp', destination: '203.0.113.5', port: 22, name: 'www.example.com', verdict: 'denied', rule: null },
    { sandboxId: 'sbx_1', protocol: 'tcp', destination: '198.51.100.9', port: 8443, name: null, verdict: 'denied', rule: null },
    { sandboxId: 'sbx_1', protocol: 'icmp', destination: '198.51.100.7', port: null, name: null, verdict: 'allowed', rule: '198.51.100.7' },
  ]);
  assert.equal(out[0]!.at, new Date(0).toISOString());
});

test('DnsReportLimit: a repeat once per window; per sandbox at most a burst, refilled per second', () => {
  const limit = new DnsReportLimit({ repeatWindowMs: 30_000, burst: 3, perSecond: 1 });
  const at = (ms: number, key: string, sandbox = 'sbx_1'): boolean => limit.admit(sandbox, key, ms);
  assert.deepEqual([at(0, 'a'), at(10, 'a'), at(29_999, 'a')], [true, false, false], 'a repeat within the window');
  assert.deepEqual([at(20, 'b'), at(30, 'c'), at(40, 'd')], [true, true, false], 'the burst is spent (a, b, c)');
  assert.equal(at(50, 'x', 'sbx_2'), true, 'another sandbox has its own bucket');
  assert.equal(at(1_040, 'd'), true, 'one report more a second later');
  assert.equal(at(1_050, 'e'), false);
  assert.equal(at(31_000, 'a'), true, 'after the window the name is reported again');
  assert.equal(limit.dropped, 4);
});

test('EgressVerdicts: denied and failed lookups as dns entries (failed: allowed, its rule and error), bounded per sandbox', () => {
  const out: EgressVerdict[] = [];
  const verdicts = new EgressVerdicts({ prefix: 'rxz', slots: new SlotPolicies(DEFAULT_LAYOUT), emit: (v) => out.push(v), dnsReports: { burst: 4, perSecond: 0 } });
  for (let i = 0; i < 10; i++) verdicts.dnsDenied({ sandboxId: 'sbx_1', name: 'denied.test', qtype: i % 2 ? 'AAAA' : 'A' });
  verdicts.dnsFailed({ sandboxId: 'sbx_1', name: 'gone.pkg.test', qtype: 'A', rcode: 'NXDOMAIN', rule: '*.pkg.test' });
  verdicts.dnsFailed({ sandboxId: 'sbx_1', name: 'gone.pkg.test', qtype: 'A', rcode: 'NXDOMAIN', rule: '*.pkg.test' });
  verdicts.dnsFailed({ sandboxId: 'sbx_1', name: 'flaky.pkg.test', qtype: 'A', rcode: 'SERVFAIL', rule: '*.pkg.test' });
  for (let i = 0; i < 5; i++) verdicts.dnsDenied({ sandboxId: 'sbx_1', name: `random${i}.test`, qtype: 'A' });
  const shown = out.map((v) => [v.protocol, v.name, v.verdict, v.rule, v.error ?? null, v.destination]);
  assert.deepEqual(shown, [
    ['dns', 'denied.test', 'denied', null, null, ''],
    ['dns', 'gone.pkg.test', 'allowed', '*.pkg.test', 'NXDOMAIN', ''],
    ['dns', 'flaky.pkg.test', 'allowed', '*.pkg.test', 'SERVFAIL', ''],
    ['dns', 'random0.test', 'denied', null, null, ''],
  ], 'repeats once; then the bucket of 4 is empty');
  assert.equal(verdicts.dnsReportsDropped, 9 + 1 + 4, 'repeats of denied.test and gone.pkg.test, and random1-4');
});
