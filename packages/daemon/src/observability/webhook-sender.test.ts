/**
 * The daemon's webhook sender on real sockets, against a real HTTP receiver on loopback: by default a
 * loopback destination is refused before anything is sent, whether the URL names it literally
 * (127.0.0.1, [::1]) or through a name that resolves to it (`localhost`, checked in the connect's own
 * lookup), with the reason as `WebhookDestinationRefused`; `allowPrivateDestinations` lets the POST
 * through; a URL with credentials is refused and its credentials never sent; a closed port is an
 * ordinary (retryable) error.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebhookDestinationRefused } from '@ramify/core';
import { createWebhookSender } from './webhook-sender.js';

let server: Server;
let port = 0;
const received: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(202).end('trickled body never read');
    });
  });
  // Both loopbacks (`localhost` may resolve to either); `::` listens on 127.0.0.1 too where IPv6 is up.
  await new Promise<void>((resolve) => server.listen(0, '::', resolve));
  port = (server.address() as AddressInfo).port;
});
after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const post = (allowPrivateDestinations: boolean, url: string): Promise<{ statusCode: number }> =>
  createWebhookSender({ allowPrivateDestinations }).post({ url, headers: { 'content-type': 'application/json' }, body: '{"a":1}', timeoutMs: 5_000, signal: new AbortController().signal });

describe('webhook sender destinations', () => {
  test('by default loopback is refused, literal or resolved from a name, and the receiver sees nothing', async () => {
    const before = received.length;
    for (const [url, reason] of [
      [`http://127.0.0.1:${port}/hook`, /^destination 127\.0\.0\.1 is a loopback address: webhooks reach public addresses only; start the daemon with --webhook-allow-private to allow it$/],
      [`http://[::1]:${port}/hook`, /^destination ::1 is a loopback address:/],
      [`http://localhost:${port}/hook`, /^localhost: destination (127\.0\.0\.1|::1) is a loopback address: webhooks reach public addresses only/],
      [`https://localhost:${port}/hook`, /^localhost: destination (127\.0\.0\.1|::1) is a loopback address/],
    ] as const) {
      await assert.rejects(post(false, url), (err: unknown) => err instanceof WebhookDestinationRefused && reason.test(err.message), url);
    }
    assert.equal(received.length, before, 'nothing reached the receiver');
  });

  test('allowed, the POST goes through: body, headers and the status, the body of the answer unread', async () => {
    for (const host of ['127.0.0.1', 'localhost']) {
      const before = received.length;
      assert.deepEqual(await post(true, `http://${host}:${port}/hook`), { statusCode: 202 });
      assert.deepEqual([received.length - before, received.at(-1)?.body, received.at(-1)?.headers['content-type']], [1, '{"a":1}', 'application/json']);
    }
  });

  test('credentials in a stored URL are refused (never sent); a closed port is an ordinary error', async () => {
    const before = received.length;
    await assert.rejects(post(true, `http://user:pw@127.0.0.1:${port}/hook`), (err: unknown) => err instanceof WebhookDestinationRefused && /carries credentials/.test(err.message));
    assert.equal(received.length, before);
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await assert.rejects(post(true, `http://127.0.0.1:${closedPort}/`), (err: unknown) => !(err instanceof WebhookDestinationRefused) && /ECONNREFUSED/.test((err as Error).message));
  });
});
