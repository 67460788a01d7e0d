/**
 * IPv4 address ranges the policy resolver removes from answers (a name that resolves to a private or
 * metadata address must not open a hole into the host's networks).
 */
import { BlockList, isIPv4 } from 'node:net';

/**
 * Ranges dropped from A answers unless the caller passes its own list: "this network", RFC 1918,
 * carrier-grade NAT, loopback, link-local (including the 169.254.169.254 metadata address),
 * multicast and reserved/broadcast. Documentation ranges (192.0.2.0/24, 198.51.100.0/24,
 * 203.0.113.0/24) are deliberately not in it.
 */
export const DEFAULT_BLOCKED_RANGES: readonly string[] = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '224.0.0.0/4',
  '240.0.0.0/4',
];

/** A set of IPv4 CIDR ranges with a membership test. */
export interface Ipv4RangeSet {
  /** The ranges, as given. */
  readonly ranges: readonly string[];
  /** True when `address` (dotted IPv4) lies in one of the ranges; false for anything that is not IPv4. */
  has(address: string): boolean;
}

/**
 * Build an {@link Ipv4RangeSet} from CIDRs (`a.b.c.d/n`; a bare address means `/32`).
 * Throws `RangeError` on a malformed entry.
 */
export function ipv4RangeSet(cidrs: readonly string[]): Ipv4RangeSet {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [network, bits, extra] = cidr.split('/');
    const prefix = bits === undefined ? 32 : Number(bits);
    if (extra !== undefined || !network || !isIPv4(network) || !Number.isInteger(prefix) || prefix < 0 || prefix > 32 || (bits !== undefined && !/^\d+$/.test(bits))) {
      throw new RangeError(`'${cidr}' is not an IPv4 CIDR`);
    }
    list.addSubnet(network, prefix, 'ipv4');
  }
  return {
    ranges: [...cidrs],
    has: (address) => isIPv4(address) && list.check(address, 'ipv4'),
  };
}
