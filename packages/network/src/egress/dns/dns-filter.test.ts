import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_BLOCKED_RANGES, ipv4RangeSet } from '../policy/address-ranges.js';
import { filterAnswer } from './dns-filter.js';
import { decodeMessage, encodeReply, normalizeName, takeTcpFrames, frameForTcp, type Answer, type DnsMessage } from './dns-wire.js';

const blocked = ipv4RangeSet(DEFAULT_BLOCKED_RANGES);
const range = { min: 30, max: 3600 };

function upstream(answers: Answer[], authorities: Answer[] = []): DnsMessage {
  return { id: 1, isResponse: true, flags: 0, opcode: 'QUERY', rcode: 'NOERROR', truncated: false, questions: [], answers, authorities, additionals: [] };
}

test('default blocked ranges cover private, loopback, link-local, metadata, CGNAT; not documentation ranges', () => {
  for (const a of ['10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.0.1', '127.0.0.1', '169.254.169.254', '100.64.0.1', '100.127.255.255', '0.0.0.0', '224.0.0.1', '255.255.255.255']) {
    assert.equal(blocked.has(a), true, a);
  }
  for (const a of ['192.0.2.10', '198.51.100.7', '203.0.113.5', '172.32.0.1', '100.128.0.1', '8.8.8.8', 'not-an-ip', '::1']) {
    assert.equal(blocked.has(a), false, a);
  }
  assert.equal(ipv4RangeSet(['203.0.113.7']).has('203.0.113.7'), true);
  for (const bad of ['10.0.0.0/33', '10.0.0/8', '10.0.0.0/8/1', 'x/8', '10.0.0.0/']) assert.throws(() => ipv4RangeSet([bad]), RangeError);
});

test('normalizeName lower-cases, drops the trailing dot and rejects anything but plain hostnames', () => {
  assert.equal(normalizeName('WWW.Example.COM.'), 'www.example.com');
  assert.equal(normalizeName('_sip._tcp.example.com'), '_sip._tcp.example.com');
  for (const bad of ['', '.', 'a..b', 'bad!name.com', 'a\u0000b.com', '*.example.com', 'é.com', `${'a'.repeat(64)}.com`, `${'a.'.repeat(127)}a`]) {
    assert.equal(normalizeName(bad), null, JSON.stringify(bad));
  }
});

test('filterAnswer follows the CNAME chain, drops blocked addresses and records of other owners or types', () => {
  const f = filterAnswer(upstream([
    { type: 'CNAME', name: 'Alias.example.com', ttl: 600, data: 'www.example.com' },
    { type: 'A', name: 'www.example.com', ttl: 300, data: '203.0.113.10' },
    { type: 'A', name: 'www.example.com', ttl: 300, data: '203.0.113.10' },
    { type: 'A', name: 'www.example.com', ttl: 300, data: '10.0.0.1' },
    { type: 'A', name: 'elsewhere.example.net', ttl: 300, data: '198.51.100.1' },
    { type: 'AAAA', name: 'www.example.com', ttl: 300, data: '2001:db8::1' },
  ], [
    { type: 'SOA', name: 'example.com', ttl: 60, data: { mname: 'ns.example.com', rname: 'h.example.com', serial: 1, refresh: 1, retry: 1, expire: 1, minimum: 1 } },
    { type: 'NS', name: 'example.com', ttl: 60, data: 'ns.example.com' },
  ]), 'alias.example.com', 'A', blocked, range);
  assert.deepEqual(f.addresses, ['203.0.113.10']);
  assert.deepEqual(f.dropped, ['10.0.0.1']);
  assert.deepEqual(f.answers.map((a) => a.type), ['CNAME', 'A']);
  assert.equal(f.ttlSeconds, 300);
  assert.deepEqual(f.authorities.map((a) => a.type), ['SOA']);
});

test('filterAnswer clamps the TTL and never returns a record that outlives it', () => {
  const long = filterAnswer(upstream([{ type: 'A', name: 'x.example.com', ttl: 86400, data: '203.0.113.1' }]), 'x.example.com', 'A', blocked, range);
  assert.equal(long.ttlSeconds, 3600);
  assert.deepEqual(long.answers.map((a) => (a as { ttl: number }).ttl), [3600]);
  const short = filterAnswer(upstream([{ type: 'A', name: 'x.example.com', ttl: 0, data: '203.0.113.1' }]), 'x.example.com', 'A', blocked, range);
  assert.equal(short.ttlSeconds, 30);
  assert.deepEqual(short.answers.map((a) => (a as { ttl: number }).ttl), [0]);
});

test('filterAnswer keeps records of a non-address type and no addresses', () => {
  const f = filterAnswer(upstream([
    { type: 'TXT', name: 't.example.com', ttl: 60, data: 'hello' },
    { type: 'A', name: 't.example.com', ttl: 60, data: '203.0.113.1' },
  ]), 't.example.com', 'TXT', blocked, range);
  assert.deepEqual(f.answers.map((a) => a.type), ['TXT']);
  assert.deepEqual(f.addresses, []);
});

test('replies round-trip through dns-packet; TCP framing splits and keeps partial frames', () => {
  const query: DnsMessage = { id: 77, isResponse: false, flags: 0x100, opcode: 'QUERY', rcode: 'NOERROR', truncated: false, questions: [{ type: 'A', name: 'x.example.com', class: 'IN' }], answers: [], authorities: [], additionals: [] };
  const reply = decodeMessage(encodeReply(query, { rcode: 'NXDOMAIN' }));
  assert.equal(reply.id, 77);
  assert.equal(reply.isResponse, true);
  assert.equal(reply.rcode, 'NXDOMAIN');
  assert.deepEqual(reply.questions.map((q) => q.name), ['x.example.com']);
  const framed = Buffer.concat([frameForTcp(Buffer.from('ab')), frameForTcp(Buffer.from('cde')).subarray(0, 3)]);
  const { frames, rest } = takeTcpFrames(framed);
  assert.deepEqual(frames.map((f) => f.toString()), ['ab']);
  assert.equal(rest.length, 3);
});
