/**
 * The webhook destination policy (destination.ts): which addresses are public (ipaddr.js's ranges), what a
 * refusal says, the flag that lifts it, this host's own addresses, literal IP hosts refused at create, and
 * credentials redacted from output. The sender's use of it on real sockets: daemon's webhook-sender.test.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RamifyError } from '@ramify/contracts';
import { checkWebhookUrlHost, destinationRefusal, literalAddress, nonPublicRange, redactWebhookUrl } from './destination.js';

describe('webhook destinations', () => {
  test('non-public addresses are named by their range; public ones are null', () => {
    const cases: Array<[string, string | null]> = [
      ['127.0.0.1', 'loopback'], ['127.9.9.9', 'loopback'], ['::1', 'loopback'], ['::ffff:127.0.0.1', 'loopback'],
      ['10.1.2.3', 'private'], ['172.16.0.1', 'private'], ['192.168.1.1', 'private'], ['::ffff:10.0.0.1', 'private'],
      ['169.254.169.254', 'linkLocal'], ['fe80::1', 'linkLocal'], ['fd00::1', 'uniqueLocal'], ['0.0.0.0', 'unspecified'], ['::', 'unspecified'],
      ['100.64.0.1', 'carrierGradeNat'], ['224.0.0.1', 'multicast'], ['255.255.255.255', 'broadcast'], ['192.0.2.1', 'reserved'],
      ['8.8.8.8', null], ['93.184.216.34', null], ['2606:4700:4700::1111', null], ['::ffff:8.8.8.8', null],
    ];
    for (const [address, range] of cases) assert.equal(nonPublicRange(address), range, address);
    assert.throws(() => nonPublicRange('localhost'));
  });

  test('a refusal names the address, its range and the flag; the flag allows every address', () => {
    assert.equal(destinationRefusal('127.0.0.1', { allowPrivate: false }),
      'destination 127.0.0.1 is a loopback address: webhooks reach public addresses only; start the daemon with --webhook-allow-private to allow it');
    assert.match(destinationRefusal('169.254.169.254', { allowPrivate: false }) ?? '', /^destination 169\.254\.169\.254 is a link-local address, .*never reach it, not even with --webhook-allow-private$/);
    assert.match(destinationRefusal('::ffff:192.168.0.7', { allowPrivate: false }) ?? '', /^destination 192\.168\.0\.7 is a private address:/);
    assert.match(destinationRefusal('2001:db8::1', { allowPrivate: false }) ?? '', /is a reserved address/);
    assert.match(destinationRefusal('2002::1', { allowPrivate: false }) ?? '', /is a special-purpose \(6to4\) address/);
    assert.equal(destinationRefusal('8.8.8.8', { allowPrivate: false }), null);
    for (const address of ['127.0.0.1', '10.0.0.1', '::1', 'fd12::1', '100.64.0.1']) assert.equal(destinationRefusal(address, { allowPrivate: true }), null, address);
  });

  test('link-local addresses and cloud metadata endpoints are refused even with the flag', () => {
    for (const address of ['169.254.169.254', '169.254.0.1', 'fe80::1', '::ffff:169.254.169.254', 'fd00:ec2::254', '100.100.100.200']) {
      for (const allowPrivate of [false, true]) {
        assert.match(destinationRefusal(address, { allowPrivate }) ?? '', /webhooks never reach it, not even with --webhook-allow-private$/, `${address} ${allowPrivate}`);
      }
    }
    assert.throws(() => checkWebhookUrlHost(new URL('http://169.254.169.254/latest/meta-data'), true), (err: unknown) => err instanceof RamifyError && err.code === 'VALIDATION_FAILED');
  });

  test("this host's own public addresses are refused too, unless allowed", () => {
    const hostAddresses = new Set(['203.0.114.10']);
    assert.match(destinationRefusal('203.0.114.10', { allowPrivate: false, hostAddresses }) ?? '', /^destination 203\.0\.114\.10 is an address of this host:/);
    assert.equal(destinationRefusal('203.0.114.11', { allowPrivate: false, hostAddresses }), null);
    assert.equal(destinationRefusal('203.0.114.10', { allowPrivate: true, hostAddresses }), null);
  });

  test('at create, a literal non-public IP host is VALIDATION_FAILED; a name or a public IP is not', () => {
    assert.deepEqual([literalAddress(new URL('http://[::1]:80/x')), literalAddress(new URL('http://hooks.example.com/')), literalAddress(new URL('http://0x7f.1/'))], ['::1', null, '127.0.0.1']);
    for (const url of ['http://127.0.0.1:9/x', 'http://[::1]/', 'http://10.0.0.5/', 'http://0x7f.1/', 'http://[::ffff:7f00:1]/']) {
      assert.throws(() => checkWebhookUrlHost(new URL(url), false), (err: unknown) => err instanceof RamifyError && err.code === 'VALIDATION_FAILED' && /webhooks reach public addresses only; start the daemon with --webhook-allow-private/.test(err.message), url);
      assert.doesNotThrow(() => checkWebhookUrlHost(new URL(url), true), url);
    }
    for (const url of ['http://localhost:9/x', 'https://hooks.example.com/r', 'https://8.8.8.8/x']) assert.doesNotThrow(() => checkWebhookUrlHost(new URL(url), false), url);
  });

  test('credentials are redacted from a URL; one without is returned as is', () => {
    assert.equal(redactWebhookUrl('https://user:pw@hooks.example.com/r?token=1'), 'https://hooks.example.com/r?token=1');
    assert.equal(redactWebhookUrl('https://user@hooks.example.com/r'), 'https://hooks.example.com/r');
    assert.equal(redactWebhookUrl('https://hooks.example.com/r'), 'https://hooks.example.com/r');
  });
});
