/**
 * Core's WebhookSender over `node:http`/`node:https`: one POST, no redirects followed, bounded by
 * `timeoutMs` until the response's status line.
 *
 * Destinations (core's `webhooks/destination.ts`): the URL's host is resolved by a `lookup` of our own
 * that checks EVERY address the name has and hands the socket only checked ones, so the address connected
 * to is the address checked (a DNS answer that changes between a check and the connect cannot swap it).
 * A literal IP host (which skips `lookup`) is checked before the request. A refused destination, and a URL
 * stored with credentials before they were refused, throw `WebhookDestinationRefused`: a permanent failure.
 *
 * Connections are kept alive **per destination** (origin: scheme, host, port): an `http.Agent` of this
 * sender's own for each, every socket of which was connected through the checked `lookup` (or to the
 * checked literal address), so a reused socket goes to an address that passed the check. It is never a
 * pool shared with other requests of the process. Idle sockets close after {@link IDLE_SOCKET_MS}. A new
 * TCP connection per delivery was a third of a delivery's cost on the daemon's main thread
 * (bench/events/delivery-cost.mjs). The answer's body is drained in the background only when it is small
 * and quick ({@link DRAIN_MAX_BYTES}, {@link DRAIN_MS}), so the socket can serve the next delivery; a larger
 * or slower one is cut (the socket destroyed): a receiver that trickles its answer still holds nothing.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { networkInterfaces } from 'node:os';
import { destinationRefusal, literalAddress, WebhookDestinationRefused, type WebhookSender } from '@ramify/core';

/** An idle kept-alive socket closes after this long, ms: under Node's HTTP server default keep-alive (5 s). */
export const IDLE_SOCKET_MS = 4_000;
/** An answer's body is drained (so its socket is reused) while it is at most this many bytes ... */
export const DRAIN_MAX_BYTES = 64 * 1024;
/** ... and ends within this long after its status line, ms; else its socket is destroyed. */
export const DRAIN_MS = 1_000;
/** Destinations with an agent at most; the least recently used one beyond is closed. */
const MAX_AGENTS = 64;

/**
 * The daemon's webhook sender.
 * @param options.allowPrivateDestinations `ramify serve --webhook-allow-private`: also loopback, private,
 * link-local and this host's own addresses (default false: public addresses only).
 */
export function createWebhookSender(options: { allowPrivateDestinations: boolean }): WebhookSender {
  const allowPrivate = options.allowPrivateDestinations;
  const refusal = (address: string): string | null => destinationRefusal(address, { allowPrivate, hostAddresses: allowPrivate ? undefined : hostAddresses() });
  const lookup = guardedLookup(refusal);
  const agents = new DestinationAgents(lookup);
  return {
    post: async ({ url, headers, body, timeoutMs, signal }) => {
      const target = new URL(url);
      if (target.username !== '' || target.password !== '') {
        throw new WebhookDestinationRefused('the webhook URL carries credentials (user:password@), which are never sent: make the webhook again without them (the body is signed with its secret)');
      }
      const literal = literalAddress(target);
      const refused = literal === null ? null : refusal(literal);
      if (refused !== null) throw new WebhookDestinationRefused(refused);
      const bounded = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
      const send = (): Promise<IncomingMessage> => new Promise<IncomingMessage>((resolve, reject) => {
        const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
        const req: ClientRequest = request(target, {
          method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, signal: bounded, lookup, agent: agents.for(target),
        }, resolve);
        req.once('error', (err: Error & { code?: string }) => {
          if (err instanceof WebhookDestinationRefused) reject(err);
          else if (bounded.aborted) reject(new Error(`no answer within ${timeoutMs} ms`));
          // A kept-alive socket the receiver closed as we reused it: not the receiver's answer, send again.
          else if (req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) reject(new StaleSocket());
          else reject(new Error(err.code ?? err.message));
        });
        req.end(body);
      });
      const res = await send().catch((err: unknown) => (err instanceof StaleSocket ? send() : Promise.reject(err)));
      release(res);
      return { statusCode: res.statusCode ?? 0 };
    },
  };
}

/** A reused socket was closed under the request (retried once on a fresh one). */
class StaleSocket extends Error {}

/** Give the answer's socket back to its agent when its body is small and ends soon; else destroy it. */
function release(res: IncomingMessage): void {
  const declared = res.headers['content-length'];
  if (declared !== undefined && !(Number(declared) <= DRAIN_MAX_BYTES)) {
    res.destroy();
    return;
  }
  let bytes = 0;
  const cut = setTimeout(() => res.destroy(), DRAIN_MS);
  cut.unref();
  res.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > DRAIN_MAX_BYTES) res.destroy();
  });
  res.once('close', () => clearTimeout(cut));
  res.once('error', () => undefined);
}

/** One keep-alive agent per destination origin, this sender's own, each connecting through the checked `lookup`. */
class DestinationAgents {
  readonly #agents = new Map<string, HttpAgent>();

  constructor(private readonly lookup: LookupFunction) {}

  for(target: URL): HttpAgent {
    const key = target.origin;
    let agent = this.#agents.get(key);
    if (agent) this.#agents.delete(key);
    else {
      const options = { keepAlive: true, timeout: IDLE_SOCKET_MS, maxFreeSockets: 4, scheduling: 'lifo' as const, lookup: this.lookup };
      agent = target.protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options);
    }
    this.#agents.set(key, agent); // Most recently used last.
    if (this.#agents.size > MAX_AGENTS) {
      const [oldest, old] = this.#agents.entries().next().value as [string, HttpAgent];
      this.#agents.delete(oldest);
      old.destroy();
    }
    return agent;
  }
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
