import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DENY_ALL_EGRESS_POLICY, parseEgressPolicy } from '@ramify/core';
import { hostNameservers } from '../host-egress.js';
import { deleteElements, dnsElement, nflogGroupFor, policyElements, tableScript } from './nft-ruleset.js';

const keys = (rules: string[]) => policyElements('rmeh3', '10.9.0.14', parseEgressPolicy(rules)).map((e) => `${e.set} ${e.key}`);

test('open policies (no rules, or *) put the slot in the open set', () => {
  assert.deepEqual(keys([]), ['spoof "rmeh3" . 10.9.0.14', 'open 10.9.0.14']);
  assert.deepEqual(keys(['example.com', '*']), ['spoof "rmeh3" . 10.9.0.14', 'open 10.9.0.14']);
});

test('deny-all gives the slot only its anti-spoofing element: not open, no address, so every packet falls to deny', () => {
  assert.deepEqual(policyElements('rmeh3', '10.9.0.14', DENY_ALL_EGRESS_POLICY).map((e) => `${e.set} ${e.key}`), ['spoof "rmeh3" . 10.9.0.14']);
  assert.deepEqual(policyElements('rmeh3', '10.9.0.14', parseEgressPolicy({ mode: 'deny-all' })), policyElements('rmeh3', '10.9.0.14', DENY_ALL_EGRESS_POLICY));
});

test('address rules become set elements; covered ones are dropped; names add nothing', () => {
  assert.deepEqual(keys(['203.0.113.10:443', '203.0.113.0/24', '198.51.100.7:8080-8090', '198.51.100.7:8081', 'example.com', '192.0.2.1']), [
    'spoof "rmeh3" . 10.9.0.14',
    'net 10.9.0.14 . 203.0.113.0/24',
    'net 10.9.0.14 . 192.0.2.1',
    'netport 10.9.0.14 . 198.51.100.7 . 8080-8090',
  ]);
});

test('partly overlapping or adjacent port ranges on one address are merged (an interval set refuses the overlap)', () => {
  assert.deepEqual(keys(['198.51.100.7:80-90', '198.51.100.7:85-95', '198.51.100.7:96', '198.51.100.7:200', '203.0.113.0/24:50-60']), [
    'spoof "rmeh3" . 10.9.0.14',
    'netport 10.9.0.14 . 203.0.113.0/24 . 50-60',
    'netport 10.9.0.14 . 198.51.100.7 . 80-96',
    'netport 10.9.0.14 . 198.51.100.7 . 200',
  ]);
});

test('DNS elements carry the TTL as timeout; deletes tolerate missing elements', () => {
  const e = dnsElement('10.9.0.14', '203.0.113.10', { from: 443, to: 443 }, 29.2);
  assert.deepEqual(e, { set: 'dnsport', key: '10.9.0.14 . 203.0.113.10 . 443', timeoutSeconds: 30 });
  assert.deepEqual(deleteElements('rme', [e]), [
    'add element inet rme dnsport { 10.9.0.14 . 203.0.113.10 . 443 timeout 1s }',
    'delete element inet rme dnsport { 10.9.0.14 . 203.0.113.10 . 443 }',
  ]);
});

test('the table replaces the plain network table and redirects port 53 to the resolver', () => {
  const text = tableScript({ prefix: 'rme', slotRange: '10.9.0.0/16', resolverPort: 5300, dnsServiceAddress: '10.254.0.53' });
  assert.match(text, /^table ip rme \{\}\ndelete table ip rme\n/);
  assert.match(text, /th dport 53 redirect to :5300/);
  assert.match(text, /ip saddr 10\.9\.0\.0\/16 oifname != "rmeh\*" masquerade/);
});

test('private networks: peer pairs pass right after anti-spoofing (before the blocked slot range) and are never redirected', () => {
  const text = tableScript({ prefix: 'rme', slotRange: '10.9.0.0/16', resolverPort: 5300, dnsServiceAddress: '10.254.0.53', proxyPorts: { http: 8080, tls: 8443 } });
  assert.match(text, /set peers \{ type ipv4_addr \. ipv4_addr; \}/);
  const outbound = text.slice(text.indexOf('chain outbound'));
  const order = ['!= @spoof goto deny', '@peers goto peer', '@blocked goto deny'].map((rule) => outbound.indexOf(rule));
  assert.ok(order.every((i, k) => i >= 0 && (k === 0 || i > order[k - 1]!)), `outbound order: ${order.join(', ')}`);
  const prerouting = text.slice(text.indexOf('chain prerouting'));
  assert.ok(prerouting.indexOf('@peers accept') < prerouting.indexOf('dport 53 redirect'), 'peers before the DNS redirect');
});

test('the table keeps no TCP close state (runsc resets TIME_WAIT endpoints at a checkpoint)', () => {
  const text = tableScript({ prefix: 'rme', slotRange: '10.9.0.0/16', resolverPort: 5300, dnsServiceAddress: '10.254.0.53' });
  assert.doesNotMatch(text, /closing|tcp flags & fin/);
});

test('with a proxy and an NFLOG group: 80/443 redirected, address rules and open slots excepted, verdicts logged', () => {
  const text = tableScript({ prefix: 'rme', slotRange: '10.9.0.0/16', resolverPort: 5300, dnsServiceAddress: '10.254.0.53', proxyPorts: { http: 5380, tls: 5443 }, nflogGroup: 40001 });
  assert.match(text, /iifname "rmeh\*" tcp dport \{ 80, 443 \} jump proxy_redirect/);
  assert.match(text, /ip saddr @open return\n\s+ip daddr @blocked return\n\s+iifname \. ip saddr != @spoof return\n\s+ip saddr \. ip daddr @net return\n\s+ip saddr \. ip daddr \. tcp dport @netport return/);
  assert.match(text, /tcp dport 80 redirect to :5380\n\s+tcp dport 443 redirect to :5443/);
  assert.match(text, /ct status dnat tcp dport \{ 5380, 5443 \} accept/);
  assert.match(text, /ct state new update @log_a \{ iifname limit rate [^}]+\} log group 40001 prefix "rme a"\n\s+accept/);
  assert.match(text, /log group 40001 prefix "rme d"\n\s+drop/);
  assert.notEqual(nflogGroupFor('rxa'), nflogGroupFor('rxd'));
  assert.ok(nflogGroupFor('rmf') >= 20000 && nflogGroupFor('rmf') < 60000);
});

test('host nameservers skip loopback stubs and IPv6', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'rme-resolv-'));
  try {
    const path = join(dir, 'resolv.conf');
    await writeFile(path, 'nameserver 127.0.0.53\nnameserver 192.0.2.53\nnameserver ::1\n# nameserver 1.1.1.1\nsearch x\n');
    assert.deepEqual(await hostNameservers(path), [{ address: '192.0.2.53' }]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
