/**
 * Core's WebhookSender over `node:http`/`node:https`: one POST, no redirects followed, bounded by
 * `timeoutMs` until the response's status line; the response body is never read (the socket is
 * destroyed), so a receiver that trickles its answer holds nothing.
 *
 * Destinations (core's `webhooks/destination.ts`): the URL's host is resolved by a `lookup` of our own
 * that checks EVERY address the name has and hands the socket only checked ones, so the address connected
 * to is the address checked (a DNS answer that changes between a check and the connect cannot swap it).
 * A literal IP host (which skips `lookup`) is checked before the request. A refused destination, and a URL
 * stored with credentials before they were refused, throw `WebhookDestinationRefused`: a permanent failure.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { networkInterfaces } from 'node:os';
import { destinationRefusal, literalAddress, WebhookDestinationRefused, type WebhookSender } from '@ramify/core';

/**
 * The daemon's webhook sender.
 * @param options.allowPrivateDestinations `ramify serve --webhook-allow-private`: also loopback, private,
 * link-local and this host's own addresses (default false: public addresses only).
 */
export function createWebhookSender(options: { allowPrivateDestinations: boolean }): WebhookSender {
  const allowPrivate = options.allowPrivateDestinations;
  const refusal = (address: string): string | null => destinationRefusal(address, { allowPrivate, hostAddresses: allowPrivate ? undefined : hostAddresses() });
  const lookup = guardedLookup(refusal);
  return {
    post: async ({ url, headers, body, timeoutMs, signal }) => {
      const target = new URL(url);
      if (target.username !== '' || target.password !== '') {
        throw new WebhookDestinationRefused('the webhook URL carries credentials (user:password@), which are never sent: make the webhook again without them (the body is signed with its secret)');
      }
      const literal = literalAddress(target);
      const refused = literal === null ? null : refusal(literal);
      if (refused !== null) throw new WebhookDestinationRefused(refused);
      const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
      const bounded = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
      const res = await new Promise<IncomingMessage>((resolve, reject) => {
        const req = send(target, {
          method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, signal: bounded, lookup,
          // A socket of its own per delivery: never one pooled by another request without our lookup.
          agent: false,
        }, resolve);
        req.once('error', (err: Error & { code?: string }) => {
          if (err instanceof WebhookDestinationRefused) reject(err);
          else if (bounded.aborted) reject(new Error(`no answer within ${timeoutMs} ms`));
          else reject(new Error(err.code ?? err.message));
        });
        req.end(body);
      });
      res.destroy();
      return { statusCode: res.statusCode ?? 0 };
    },
  };
}

/**
 * A `lookup` for `net.connect` that resolves `hostname` (all its addresses), refuses it when `refusal`
 * refuses any one of them (with `WebhookDestinationRefused`), and otherwise answers as `dns.lookup` would
 * (one address, or all of them when asked: Node's happy-eyeballs connect asks for all).
 */
function guardedLookup(refusal: (address: string) => string | null): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      for (const { address } of addresses) {
        const refused = refusal(address);
        if (refused !== null) return callback(new WebhookDestinationRefused(`${hostname}: ${refused}`), '', 0);
      }
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      // @types/node types the callback for one address; with `all` Node passes the list.
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, first.address, first.family);
    });
  };
}

/** This host's own interface addresses (normalised as `ipaddr.js` prints them), read at each check. */
function hostAddresses(): Set<string> {
  const addresses = new Set<string>();
  for (const list of Object.values(networkInterfaces())) for (const info of list ?? []) addresses.add(info.address.replace(/%.*$/, ''));
  return addresses;
}
