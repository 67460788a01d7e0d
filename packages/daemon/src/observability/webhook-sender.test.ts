/**
 * The daemon's webhook sender on real sockets, against a real HTTP receiver on loopback: by default a
 * loopback destination is refused before anything is sent, whether the URL names it literally
 * (127.0.0.1, [::1]) or through a name that resolves to it (`localhost`, checked in the connect's own
 * lookup), with the reason as `WebhookDestinationRefused`; `allowPrivateDestinations` lets the POST
 * through; a URL with credentials is refused and its credentials never sent; a closed port is an
 * ordinary (retryable) error. Connections are kept alive per destination: deliveries in a row share one;
 * an answer whose body is large, or that never ends, does not hold its socket (it is closed, not reused).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebhookDestinationRefused } from '@ramify/core';
import { createWebhookSender, DRAIN_MAX_BYTES } from './webhook-sender.js';

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

  test('allowed, the POST goes through: body, headers and the status, resolved at the status line', async () => {
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

describe('webhook sender connections', () => {
  /** A loopback receiver answering `answer(res)`, counting the connections it accepted and those closed. */
  async function receiver(answer: (res: import('node:http').ServerResponse) => void): Promise<{ url: string; opened: () => number; closed: () => number; close: () => Promise<void> }> {
    let opened = 0;
    let closed = 0;
    const srv = createServer((req, res) => {
      req.resume();
      req.on('end', () => answer(res));
    });
    srv.on('connection', (socket) => {
      opened += 1;
      socket.once('close', () => (closed += 1));
    });
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    const close = async (): Promise<void> => {
      srv.closeAllConnections();
      await new Promise<void>((resolve) => srv.close(() => resolve()));
    };
    return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/hook`, opened: () => opened, closed: () => closed, close };
  }
  const sender = createWebhookSender({ allowPrivateDestinations: true });
  const send = (url: string): Promise<{ statusCode: number }> => sender.post({ url, headers: { 'content-type': 'application/json' }, body: '{"a":1}', timeoutMs: 5_000, signal: new AbortController().signal });
  /** A send, then a moment: it resolves at the status line, and the socket is free once the body is drained. */
  const sendApart = async (url: string): Promise<{ statusCode: number }> => {
    const answer = await send(url);
    await new Promise((resolve) => setTimeout(resolve, 20));
    return answer;
  };

  test('deliveries in a row to one destination share a kept-alive connection', async () => {
    const r = await receiver((res) => res.writeHead(200).end('ok'));
    try {
      for (let i = 0; i < 3; i++) assert.deepEqual(await sendApart(r.url), { statusCode: 200 });
      assert.equal(r.opened(), 1);
    } finally {
      await r.close();
    }
  });

  test('an answer with a large body, or one that never ends, is cut: its socket is not reused', async () => {
    const large = await receiver((res) => res.writeHead(200).end('x'.repeat(DRAIN_MAX_BYTES + 1)));
    const endless = await receiver((res) => res.writeHead(200).write('trickling...'));
    try {
      for (let i = 0; i < 2; i++) assert.deepEqual(await sendApart(large.url), { statusCode: 200 });
      assert.equal(large.opened(), 2);
      assert.deepEqual(await send(endless.url), { statusCode: 200 });
      // The body never ends: the sender gives its socket up (DRAIN_MS), and the next delivery opens another.
      for (const end = Date.now() + 10_000; endless.closed() < 1 && Date.now() < end;) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(endless.closed(), 1);
      assert.deepEqual(await send(endless.url), { statusCode: 200 });
      assert.equal(endless.opened(), 2);
    } finally {
      await large.close();
      await endless.close();
    }
  });
});
