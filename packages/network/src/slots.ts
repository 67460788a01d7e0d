/**
 * Slot addressing. Every sandbox namespace holds the same guest address; slot `n` gives the link
 * between the sandbox's router namespace and the host a unique /30 inside the slot range:
 * host side `base + 4n + 1`, router side (the address the host sees the sandbox as) `base + 4n + 2`.
 */

/** Addresses of the fork-friendly layout. */
export interface SlotLayout {
  /** Guest address inside every sandbox namespace. */
  guestAddress: string;
  /** Gateway (router side of the sandbox veth). */
  gatewayAddress: string;
  /** Prefix length of the guest link. */
  guestPrefix: number;
  /** First address of the slot range, e.g. `10.253.0.0`; the range is a /16. */
  slotBase: string;
}

export const DEFAULT_LAYOUT: SlotLayout = {
  guestAddress: '10.254.0.2',
  gatewayAddress: '10.254.0.1',
  guestPrefix: 30,
  slotBase: '10.253.0.0',
};

/**
 * The layout for a namespace prefix. The default prefix `rmf` uses {@link DEFAULT_LAYOUT}; any other
 * prefix (tests, a second daemon on one host) gets its own slot range `10.<200-251>.0.0/16` derived from
 * the prefix, so two daemons' host-side slot addresses and routes never collide.
 */
export function layoutForPrefix(prefix: string): SlotLayout {
  if (prefix === 'rmf') return DEFAULT_LAYOUT;
  let hash = 0;
  for (const ch of prefix) hash = (hash * 31 + ch.charCodeAt(0)) >>> 0;
  return { ...DEFAULT_LAYOUT, slotBase: `10.${200 + (hash % 52)}.0.0` };
}

/** Slots fit a /16 of /30 links: 0..16383. */
export const MAX_SLOT = 16383;

const toInt = (ip: string): number => ip.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
const toIp = (n: number): string => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');

/** Host-side and sandbox-side (slot) addresses of slot `slot`. Throws RangeError outside 0..MAX_SLOT. */
export function slotAddresses(layout: SlotLayout, slot: number): { hostAddress: string; slotAddress: string } {
  if (!Number.isInteger(slot) || slot < 0 || slot > MAX_SLOT) throw new RangeError(`slot ${slot} outside 0..${MAX_SLOT}`);
  const base = toInt(layout.slotBase) + slot * 4;
  return { hostAddress: toIp(base + 1), slotAddress: toIp(base + 2) };
}

/** CIDR covering every slot address, for host-side rules. */
export const slotRange = (layout: SlotLayout): string => `${layout.slotBase}/16`;

/**
 * The nameserver sandboxes' resolv.conf names. Not an address of anything: outside the guest link, so the
 * sandbox routes it via its router to the host, where every port-53 packet from a slot is redirected to
 * the policy resolver (and any other port to it is dropped).
 */
export const DNS_SERVICE_ADDRESS = '10.254.0.53';
