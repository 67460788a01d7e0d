/** Host parsing and the token/cookie logic of the ingress (pure functions). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isIngressHost, parseIngressHost } from './host.js';
import { ACCESS_COOKIE, accessCookie, presentedToken, upstreamHeaders, withoutTokenParameter } from './access.js';
import { errorAnswer, wantsHtml } from './answers.js';
import { RamifyError } from '@ramify/contracts';

const ID = 'sbx_01J9ZK3V5W6X7Y8Z9A0B1C2D3E';

test('hosts: case-insensitive, with or without the listen port, _ or - after sbx', () => {
  for (const host of [`3000-${ID}.localhost`, `3000-${ID.toLowerCase()}.localhost:7424`, `3000-SBX-${ID.slice(4)}.LOCALHOST`, `3000-${ID}.localhost.`]) {
    assert.deepEqual(parseIngressHost(host, 'localhost'), { port: 3000, sandboxId: ID }, host);
  }
  assert.deepEqual(parseIngressHost(`8080-${ID}.sbx.example.com:443`, 'sbx.example.com'), { port: 8080, sandboxId: ID });
});

test('hosts that name no sandbox are refused with the reason', () => {
  const bad: Array<[string | undefined, RegExp]> = [
    [undefined, /no Host header/],
    ['localhost:7424', /not under the ingress domain/],
    ['other.example.com', /not under the ingress domain/],
    ['.localhost', /no sandbox part/],
    ['a.b.localhost', /no sandbox part/],
    [`${ID}.localhost`, /does not name a port and a sandbox/],
    ['3000-sbx_short.localhost', /does not name a port and a sandbox/],
    [`0-${ID}.localhost`, /not a port/],
    [`70000-${ID}.localhost`, /not a port/],
  ];
  for (const [host, why] of bad) {
    const parsed = parseIngressHost(host, 'localhost');
    assert.ok(!isIngressHost(parsed), String(host));
    assert.match(parsed.problem, why, String(host));
  }
});

test('token sources: header first, then query parameter, then cookie', () => {
  assert.deepEqual(presentedToken({ url: '/?ramify_access_token=q', headers: { 'x-ramify-access-token': ' h ', cookie: `${ACCESS_COOKIE}=c` } }), { value: 'h', source: 'header' });
  assert.deepEqual(presentedToken({ url: '/a?x=1&ramify_access_token=q', headers: { cookie: `${ACCESS_COOKIE}=c` } }), { value: 'q', source: 'query' });
  assert.deepEqual(presentedToken({ url: '/', headers: { cookie: `a=1; ${ACCESS_COOKIE}=c; b=2` } }), { value: 'c', source: 'cookie' });
  assert.equal(presentedToken({ url: '/', headers: { cookie: 'a=1' } }), null);
  assert.equal(withoutTokenParameter('/a/b?x=1&ramify_access_token=q&y=2'), '/a/b?x=1&y=2');
  assert.equal(withoutTokenParameter('/?ramify_access_token=q'), '/');
});

test('the cookie is HttpOnly, host-only (no Domain), path /, SameSite=Lax; Secure over TLS', () => {
  const c = accessCookie('rit_x', { secure: false });
  assert.match(c, /^ramify_access_token=rit_x;/);
  assert.match(c, /HttpOnly/);
  assert.match(c, /Path=\//);
  assert.match(c, /SameSite=Lax/);
  assert.doesNotMatch(c, /Domain=/i);
  assert.doesNotMatch(c, /Secure/);
  assert.match(accessCookie('rit_x', { secure: true }), /Secure/);
});

test('the sandbox server never sees the token; forwarded headers are the ingress\'s', () => {
  const out = upstreamHeaders(
    { 'x-ramify-access-token': 'rit_x', cookie: `a=1; ${ACCESS_COOKIE}=rit_x; b=2`, 'x-forwarded-for': '6.6.6.6', host: 'h' },
    { address: '127.0.0.1', protocol: 'https', host: 'h' },
  );
  assert.equal(out['x-ramify-access-token'], undefined);
  assert.equal(out.cookie, 'a=1; b=2');
  assert.equal(out['x-forwarded-for'], '127.0.0.1');
  assert.equal(out['x-forwarded-proto'], 'https');
  assert.equal(out['x-forwarded-host'], 'h');
  assert.equal(upstreamHeaders({ cookie: `${ACCESS_COOKIE}=rit_x` }, { address: '', protocol: 'http', host: '' }).cookie, undefined);
  assert.equal(upstreamHeaders({ cookie: 'a=1' }, { address: '', protocol: 'http', host: '' }).cookie, 'a=1');
});

test('a plain request loses the client connection\'s hop-by-hop headers; an upgrade keeps them', () => {
  const client = { address: '127.0.0.1', protocol: 'http' as const, host: 'h' };
  const sent = { connection: 'close, X-Trace', 'keep-alive': 'timeout=5', 'x-trace': '1', accept: '*/*' };
  assert.deepEqual(Object.keys(upstreamHeaders(sent, client, 'drop')).sort(), ['accept', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto']);
  const upgrade = upstreamHeaders({ connection: 'Upgrade', upgrade: 'websocket' }, client, 'keep');
  assert.deepEqual([upgrade.connection, upgrade.upgrade], ['Upgrade', 'websocket']);
  assert.equal(withoutTokenParameter('/a//b?%41=1'), '/a//b?%41=1', 'a URL without the token is passed on as sent');
});

test('answers: JSON for API clients, HTML for browsers, Retry-After on 503', () => {
  assert.ok(wantsHtml('text/html,application/xhtml+xml;q=0.9'));
  assert.ok(!wantsHtml('application/json'));
  assert.ok(!wantsHtml(undefined));
  const json = errorAnswer(new RamifyError('ACCESS_TOKEN_REQUIRED', 'needs <token>'), false);
  assert.equal(json.status, 401);
  assert.equal(JSON.parse(json.body).error.code, 'ACCESS_TOKEN_REQUIRED');
  const html = errorAnswer(new RamifyError('ACCESS_TOKEN_INVALID', 'no <b>'), true);
  assert.equal(html.status, 403);
  assert.match(html.headers['content-type'] ?? '', /text\/html/);
  assert.match(html.body, /no &#60;b&#62;/);
  assert.equal(errorAnswer(new RamifyError('SANDBOX_WAKING', 'w', { retryAfterSeconds: 3 }), false).headers['retry-after'], '3');
});
