/**
 * Where a webhook may be delivered (docs/design/EVENTS.md, "Destinations"): by default public addresses
 * only, so that a team admin cannot make the daemon POST to the host's own services, its private network
 * or a cloud metadata endpoint (169.254.169.254). The address ranges are `ipaddr.js`'s (`range()`: only
 * `unicast` is public; an IPv4-mapped IPv6 address is judged as its IPv4 address). The daemon's sender
 * checks every address a name resolves to and connects only to a checked one; {@link createWebhook}
 * refuses a URL whose literal host is a non-public IP at once. `ramify serve --webhook-allow-private`
 * allows them (receivers on the operator's own network), but for link-local addresses and the known
 * cloud metadata endpoints outside that range ({@link METADATA_ADDRESSES}): no receiver lives there, and
 * the daemon's host credentials do (a newcomer pointed a webhook at 169.254.169.254 under the flag).
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { RamifyError } from '@ramify/contracts';

/** The flag that allows non-public destinations, as the refusals name it. */
export const WEBHOOK_ALLOW_PRIVATE_FLAG = '--webhook-allow-private';

/** What a refusal says of each `ipaddr.js` range; any other non-`unicast` range is "a special-purpose (<range>) address". */
const RANGE_WORDS: Record<string, string> = {
  loopback: 'a loopback address',
  private: 'a private address',
  linkLocal: 'a link-local address',
  uniqueLocal: 'a unique-local address',
  unspecified: 'an unspecified address',
  multicast: 'a multicast address',
  broadcast: 'a broadcast address',
  carrierGradeNat: 'a carrier-grade NAT address',
  reserved: 'a reserved address',
};

/**
 * The `ipaddr.js` range of a non-public IP address (`loopback`, `private`, `linkLocal`, ...), or null
 * when it is public (`unicast`). `address` is an IPv4 or IPv6 literal without brackets.
 * @throws Error when `address` is not an IP address.
 */
export function nonPublicRange(address: string): string | null {
  const range = ipaddr.process(address).range();
  return range === 'unicast' ? null : range;
}

/**
 * Cloud metadata endpoints outside the link-local ranges: AWS's IPv6 one (a unique-local address) and
 * Alibaba Cloud's (carrier-grade NAT). Refused whatever the flag says, as link-local addresses are.
 */
export const METADATA_ADDRESSES: ReadonlySet<string> = new Set(['fd00:ec2::254', '100.100.100.200']);

/** A delivery destination refused by policy: a permanent failure (the dispatcher does not retry it). */
export class WebhookDestinationRefused extends Error {
  override readonly name = 'WebhookDestinationRefused';
}

/**
 * Why `address` may not be delivered to, or null when it may: link-local addresses and
 * {@link METADATA_ADDRESSES} always; other non-public addresses and `hostAddresses` (this host's own
 * interface addresses) unless `allowPrivate`.
 * E.g. `destination 127.0.0.1 is a loopback address: webhooks reach public addresses only; start the
 * daemon with --webhook-allow-private to allow it`.
 */
export function destinationRefusal(address: string, options: { allowPrivate: boolean; hostAddresses?: ReadonlySet<string> }): string | null {
  const range = nonPublicRange(address);
  const normal = ipaddr.process(address).toString();
  if (range === 'linkLocal' || METADATA_ADDRESSES.has(normal)) {
    return `destination ${normal} is ${range === 'linkLocal' ? 'a link-local address' : 'a cloud metadata endpoint'}, where no receiver lives and cloud metadata endpoints do: webhooks never reach it, not even with ${WEBHOOK_ALLOW_PRIVATE_FLAG}`;
  }
  if (options.allowPrivate) return null;
  const what = range !== null ? (RANGE_WORDS[range] ?? `a special-purpose (${range}) address`) : options.hostAddresses?.has(normal) ? 'an address of this host' : null;
  return what === null ? null : `destination ${normal} is ${what}: webhooks reach public addresses only; start the daemon with ${WEBHOOK_ALLOW_PRIVATE_FLAG} to allow it`;
}

/** The host of `url` when it is an IP literal (IPv6 without brackets), else null (a name). */
export function literalAddress(url: URL): string | null {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return isIP(host) === 0 ? null : host;
}

/**
 * Refuse, when creating a webhook, a URL whose literal host is a non-public IP (names are checked at each
 * delivery, on the addresses they resolve to then).
 * @throws RamifyError `VALIDATION_FAILED` naming the address's range and the flag that allows it.
 */
export function checkWebhookUrlHost(url: URL, allowPrivate: boolean): void {
  const address = literalAddress(url);
  const refusal = address === null ? null : destinationRefusal(address, { allowPrivate });
  if (refusal !== null) throw new RamifyError('VALIDATION_FAILED', `webhook URL refused: ${refusal}`, { url: redactWebhookUrl(url.href) });
}

/** `url` without its userinfo (`user:password@`), for output; a URL that does not parse is returned as is. */
export function redactWebhookUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.username === '' && parsed.password === '') return url;
    parsed.username = '';
    parsed.password = '';
    return parsed.href;
  } catch {
    return url;
  }
}
