/**
 * The text of the host's egress table (`table inet <prefix>`) and of its set elements. Pure functions;
 * {@link NftEgressEnforcer} sends the results to `nft -f -`.
 *
 * Rule count is constant; everything per sandbox lives in sets keyed by the slot address:
 * - `spoof`   (ifname . slot address): the only source a slot's host veth may use (anti-spoofing).
 * - `open`    (slot address): slots with open egress (mode `open`, or the rule `*`). A `deny-all` slot has
 *   only its `spoof` element: every packet it sends falls through to `deny` (port 53 reaches the resolver,
 *   which answers NXDOMAIN; 80/443 reach the proxy, which refuses).
 * - `net`     (slot . destination, intervals): address/CIDR rules without port.
 * - `netport` (slot . destination . port, intervals): address/CIDR rules with a port range.
 * - `dns` / `dnsport`: the same shapes with timeouts, filled by the policy DNS resolver's answers.
 * - `blocked` (constant): destinations no policy can open (link-local/metadata, loopback, "this network",
 *   multicast/reserved, every slot address, the DNS service address).
 * - `private` (constant): private ranges, closed to open-mode slots; an address/CIDR rule can open them.
 * - `peers`   (slot . slot): pairs of slots that share a private network, both orders (`private/`,
 *   docs/design/NETWORKS.md). Checked right after anti-spoofing, before `blocked`, on every packet (both
 *   directions): a pair allows everything between the two slots, and removing it cuts their connections.
 *   Peer traffic is never redirected to the resolver or the proxy. Independent of the egress mode.
 * Both directions are checked against the sets on every packet, so removing an element cuts
 * established connections at once. IPv6 to or from slot veths is dropped. From slot veths the host
 * itself accepts only the (redirected) resolver and proxy ports and replies to connections the host opened.
 *
 * SNI/Host proxy: TCP from an allowlist-mode slot to port 80 or 443 is redirected to the proxy's host
 * ports, unless the destination is blocked (then dropped by the filter) or allowed by an address/CIDR
 * rule (then filtered like any other traffic). Addresses learned from DNS are proxied on 80/443.
 *
 * Route guard: with `guardMark`, a `guard` chain (prerouting, before the routing decision) ORs the mark into
 * every packet from a slot veth; the policy-routing rules of `route-guard.ts` refuse unmarked slot traffic,
 * so a missing table fails closed. The chain only marks; the filter chains decide.
 *
 * Verdict log: with an NFLOG group, the first packet of each allowed forwarded connection (`<prefix> a`; `<prefix> n`
 * between peers),
 * every denied packet (`<prefix> d`) and the first packet of each proxied connection (`<prefix> p`, for
 * the original destination) are logged, rate-limited per slot veth.
 */
import type { EgressPolicy, PortRange } from '@ramify/core';

/** Marker on the last rule of the outbound chain; its presence means the table is installed. */
export const INSTALLED_MARKER = 'ramify-egress-v2';

/** Marker on the guard chain's rule (a table made with `guardMark` is installed only with it). */
export const GUARD_MARKER = 'ramify-egress-guard';

/** What the table needs to know about the host. */
export interface EgressTableSpec {
  /** Network prefix (table name, and host veths are `<prefix>h<slot>`). */
  prefix: string;
  /** CIDR of every slot address (masquerade source, and always blocked as a destination). */
  slotRange: string;
  /** Host port the resolver listens on (every interface); port-53 traffic from slots is redirected to it. */
  resolverPort: number;
  /** The address sandboxes' resolv.conf names (never routable: port 53 to it is redirected). */
  dnsServiceAddress: string;
  /**
   * Host ports of the SNI/Host proxy (listening on every interface): TCP from allowlist-mode slots to port 80
   * goes to `http`, to 443 to `tls`, except destinations an address/CIDR rule allows. Absent: no proxy.
   */
  proxyPorts?: { http: number; tls: number };
  /** NFLOG group the verdict log statements use (see {@link nflogGroupFor}); absent: nothing is logged. */
  nflogGroup?: number;
  /**
   * Mark bit the `guard` chain ORs into every packet arriving on a slot veth (see `route-guard.ts`). Absent: no
   * guard chain (then the route guard must not be installed, or it refuses all slot traffic).
   */
  guardMark?: number;
}

/** Prefixes of the NFLOG messages, after `<table prefix> `: allowed, denied, redirected to the proxy. */
export const NFLOG_KINDS = { allowed: 'a', denied: 'd', proxied: 'p', peer: 'n' } as const;

/** Private ranges (RFC 1918 and carrier-grade NAT): closed in open mode, reachable only through a rule naming them. */
export const PRIVATE_RANGES: readonly string[] = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10'];

/** Destinations always denied, besides the slot range and the DNS service address. */
export const ALWAYS_BLOCKED: readonly string[] = ['0.0.0.0/8', '127.0.0.0/8', '169.254.0.0/16', '224.0.0.0/4', '240.0.0.0/4'];

/**
 * The NFLOG group of a network prefix: 20000-59999, derived from the prefix, so that daemons (and test
 * runs) with different prefixes each read their own group. The kernel lets one listener bind a group.
 */
export function nflogGroupFor(prefix: string): number {
  let hash = 0;
  for (const ch of prefix) hash = (hash * 31 + ch.charCodeAt(0)) >>> 0;
  return 20000 + (hash % 40000);
}

const hex = (n: number): string => `0x${n.toString(16).padStart(8, '0')}`;

/** The whole table: replaces `ip <prefix>` (the network's plain table) and any older `inet <prefix>`, atomically. */
export function tableScript(spec: EgressTableSpec): string {
  const t = spec.prefix;
  const veths = `"${t}h*"`;
  const port = spec.resolverPort;
  const blocked = [...ALWAYS_BLOCKED, spec.slotRange, spec.dnsServiceAddress].join(', ');
  const proxy = spec.proxyPorts;
  const proxyPorts = proxy ? `{ ${proxy.http}, ${proxy.tls} }` : '';
  // Logging: per slot veth rate limits (dynamic sets), first packet of a connection for allowed traffic.
  const log = (kind: keyof typeof NFLOG_KINDS, rate: string): string =>
    `update @log_${NFLOG_KINDS[kind]} { iifname limit rate ${rate} } log group ${spec.nflogGroup} prefix "${t} ${NFLOG_KINDS[kind]}"`;
  const logging = spec.nflogGroup !== undefined;
  const rateSet = (kind: string): string => `  set log_${kind} { type ifname; flags dynamic, timeout; timeout 1m; size 65536; }`;
  return [
    `table ip ${t} {}`,
    `delete table ip ${t}`,
    `table inet ${t} {}`,
    `delete table inet ${t}`,
    `table inet ${t} {`,
    `  set spoof { type ifname . ipv4_addr; }`,
    `  set open { type ipv4_addr; }`,
    `  set net { type ipv4_addr . ipv4_addr; flags interval, timeout; }`,
    `  set netport { type ipv4_addr . ipv4_addr . inet_service; flags interval, timeout; }`,
    `  set dns { type ipv4_addr . ipv4_addr; flags timeout; }`,
    `  set dnsport { type ipv4_addr . ipv4_addr . inet_service; flags interval, timeout; }`,
    `  set blocked { type ipv4_addr; flags interval; auto-merge; elements = { ${blocked} }; }`,
    `  set private { type ipv4_addr; flags interval; auto-merge; elements = { ${PRIVATE_RANGES.join(', ')} }; }`,
    `  set peers { type ipv4_addr . ipv4_addr; }`,
    ...(logging ? Object.values(NFLOG_KINDS).map(rateSet) : []),
    // After others' mangle/dstnat marking (which may overwrite the whole mark), still before routing.
    ...(spec.guardMark !== undefined
      ? [
        `  chain guard { type filter hook prerouting priority filter + 10; policy accept;`,
        `    iifname ${veths} meta mark set meta mark | 0x${spec.guardMark.toString(16)} comment "${GUARD_MARKER}"`,
        `  }`,
      ]
      : []),
    `  chain prerouting { type nat hook prerouting priority dstnat; policy accept;`,
    `    iifname ${veths} ip saddr . ip daddr @peers accept`,
    `    iifname ${veths} meta l4proto { tcp, udp } th dport 53 redirect to :${port}`,
    ...(proxy ? [`    iifname ${veths} tcp dport { 80, 443 } jump proxy_redirect`] : []),
    `  }`,
    ...(proxy
      ? [
        // Open slots, blocked destinations, spoofed sources and address/CIDR rules keep their path through the filter.
        `  chain proxy_redirect {`,
        `    ip saddr @open return`,
        `    ip daddr @blocked return`,
        `    iifname . ip saddr != @spoof return`,
        `    ip saddr . ip daddr @net return`,
        `    ip saddr . ip daddr . tcp dport @netport return`,
        ...(logging ? [`    ${log('proxied', '50/second burst 100 packets')}`] : []),
        `    tcp dport 80 redirect to :${proxy.http}`,
        `    tcp dport 443 redirect to :${proxy.tls}`,
        `  }`,
      ]
      : []),
    `  chain postrouting { type nat hook postrouting priority srcnat; policy accept;`,
    `    ip saddr ${spec.slotRange} oifname != ${veths} masquerade`,
    `  }`,
    `  chain forward { type filter hook forward priority filter; policy accept;`,
    `    meta nfproto ipv6 iifname ${veths} drop`,
    `    meta nfproto ipv6 oifname ${veths} drop`,
    `    iifname ${veths} jump outbound`,
    `    oifname ${veths} jump inbound`,
    `  }`,
    `  chain outbound {`,
    `    iifname . ip saddr != @spoof goto deny`,
    `    ip saddr . ip daddr @peers goto peer`,
    `    ip daddr @blocked goto deny`,
    `    ip saddr @open ip daddr != @private goto allow`,
    `    ip saddr . ip daddr @net goto allow`,
    `    ip saddr . ip daddr @dns goto allow`,
    `    meta l4proto { tcp, udp } ip saddr . ip daddr . th dport @netport goto allow`,
    `    meta l4proto { tcp, udp } ip saddr . ip daddr . th dport @dnsport goto allow`,
    `    goto deny comment "${INSTALLED_MARKER}"`,
    `  }`,
    `  chain allow {`,
    ...(logging ? [`    ct state new ${log('allowed', '50/second burst 100 packets')}`] : []),
    `    accept`,
    `  }`,
    `  chain peer {`,
    ...(logging ? [`    ct state new ${log('peer', '50/second burst 100 packets')}`] : []),
    `    accept`,
    `  }`,
    `  chain deny {`,
    ...(logging ? [`    ${log('denied', '20/second burst 40 packets')}`] : []),
    `    drop`,
    `  }`,
    `  chain inbound {`,
    `    ct direction != reply drop`,
    `    ip saddr @blocked drop`,
    `    ip daddr @open ip saddr != @private accept`,
    `    ip daddr . ip saddr @net accept`,
    `    ip daddr . ip saddr @dns accept`,
    `    meta l4proto { tcp, udp } ip daddr . ip saddr . th sport @netport accept`,
    `    meta l4proto { tcp, udp } ip daddr . ip saddr . th sport @dnsport accept`,
    `    drop`,
    `  }`,
    `  chain input { type filter hook input priority filter; policy accept;`,
    `    meta nfproto ipv6 iifname ${veths} drop`,
    `    iifname ${veths} jump slot_input`,
    `    meta l4proto { tcp, udp } th dport ${port} drop`,
    ...(proxy ? [`    tcp dport ${proxyPorts} drop`] : []),
    `  }`,
    `  chain slot_input {`,
    `    iifname . ip saddr != @spoof goto deny`,
    `    ct direction reply accept`,
    `    ct status dnat meta l4proto { tcp, udp } th dport ${port} accept`,
    ...(proxy ? [`    ct status dnat tcp dport ${proxyPorts} accept`] : []),
    `    goto deny`,
    `  }`,
    `}`,
  ].join('\n') + '\n';
}

/** One set element of a slot: `set` name and key text (without timeout). */
export interface SetElement {
  set: 'spoof' | 'open' | 'net' | 'netport' | 'dns' | 'dnsport' | 'peers';
  key: string;
  /** Seconds; only for `dns`/`dnsport`. */
  timeoutSeconds?: number;
}

/** `add` statements for `elements` (one per element). */
export function addElements(prefix: string, elements: readonly SetElement[]): string[] {
  return elements.map((e) => `add element inet ${prefix} ${e.set} { ${e.key}${e.timeoutSeconds ? ` timeout ${e.timeoutSeconds}s` : ''} }`);
}

/**
 * Statements deleting `elements` whether or not they still exist (an expired or flushed element would make a
 * plain `delete` fail the transaction): add (a no-op when present) then delete.
 */
export function deleteElements(prefix: string, elements: readonly SetElement[]): string[] {
  return elements.flatMap((e) => [
    `add element inet ${prefix} ${e.set} { ${e.key}${e.set === 'dns' || e.set === 'dnsport' ? ' timeout 1s' : ''} }`,
    `delete element inet ${prefix} ${e.set} { ${e.key} }`,
  ]);
}

/** Add-or-refresh a timed element: create if missing, delete, add with the new timeout (all in the caller's transaction). */
export function refreshElements(prefix: string, elements: readonly SetElement[]): string[] {
  return [...deleteElements(prefix, elements), ...addElements(prefix, elements)];
}

const portText = (port: PortRange): string => (port.from === port.to ? `${port.from}` : `${port.from}-${port.to}`);

/** True for a policy that opens every destination (mode `open`, or the rule `*`); never for `deny-all`. */
export function isOpenPolicy(policy: EgressPolicy): boolean {
  return policy.mode === 'open' || policy.rules.some((r) => r.kind === 'any');
}

/** The static elements of `policy` for the slot at `slotAddress` on host veth `veth`. */
export function policyElements(veth: string, slotAddress: string, policy: EgressPolicy): SetElement[] {
  const elements: SetElement[] = [{ set: 'spoof', key: `"${veth}" . ${slotAddress}` }];
  if (isOpenPolicy(policy)) return [...elements, { set: 'open', key: slotAddress }];
  const nets: Array<{ start: number; prefix: number; port: PortRange | null }> = [];
  for (const rule of policy.rules) {
    if (rule.kind === 'ip') nets.push({ start: toInt(rule.address), prefix: 32, port: rule.port });
    if (rule.kind === 'cidr') nets.push({ start: toInt(rule.network), prefix: rule.prefix, port: rule.port });
  }
  // Interval sets refuse an element starting inside another: drop covered entries, bigger ones first.
  nets.sort((a, b) => a.prefix - b.prefix || (a.port === null ? -1 : b.port === null ? 1 : a.port.from - b.port.from));
  const kept: typeof nets = [];
  for (const n of nets) {
    if (kept.some((k) => covers(k, n))) continue;
    kept.push(n);
  }
  for (const n of mergePortRanges(kept)) {
    const dest = n.prefix === 32 ? toIp(n.start) : `${toIp(n.start)}/${n.prefix}`;
    elements.push(n.port === null ? { set: 'net', key: `${slotAddress} . ${dest}` } : { set: 'netport', key: `${slotAddress} . ${dest} . ${portText(n.port)}` });
  }
  return elements;
}

/** The timed element opening `address` (on `port`, or every port) to the slot, for `ttlSeconds`. */
export function dnsElement(slotAddress: string, address: string, port: PortRange | null, ttlSeconds: number): SetElement {
  const timeoutSeconds = Math.max(1, Math.ceil(ttlSeconds));
  return port === null
    ? { set: 'dns', key: `${slotAddress} . ${address}`, timeoutSeconds }
    : { set: 'dnsport', key: `${slotAddress} . ${address} . ${portText(port)}`, timeoutSeconds };
}

/**
 * Union the port ranges of entries with the same destination (`1.2.3.4:80-90` + `1.2.3.4:85-95` →
 * `1.2.3.4:80-95`): an interval set refuses an element whose ranges overlap another's on the same address.
 */
function mergePortRanges<T extends { start: number; prefix: number; port: PortRange | null }>(entries: T[]): T[] {
  const out: T[] = [];
  for (const n of entries) {
    const same = n.port === null ? undefined : out.find((o) => o.start === n.start && o.prefix === n.prefix && o.port !== null && o.port.from <= n.port!.to + 1 && n.port!.from <= o.port.to + 1);
    if (same && same.port && n.port) same.port = { from: Math.min(same.port.from, n.port.from), to: Math.max(same.port.to, n.port.to) };
    else out.push({ ...n, port: n.port ? { ...n.port } : null });
  }
  // A merge can make a range touch one met earlier: repeat until stable.
  return out.length < entries.length ? mergePortRanges(out) : out;
}

function covers(outer: { start: number; prefix: number; port: PortRange | null }, inner: { start: number; prefix: number; port: PortRange | null }): boolean {
  if (outer.prefix > inner.prefix) return false;
  const mask = outer.prefix === 0 ? 0 : (0xffffffff << (32 - outer.prefix)) >>> 0;
  if (((inner.start & mask) >>> 0) !== outer.start) return false;
  if (outer.port === null) return true;
  return inner.port !== null && outer.port.from <= inner.port.from && inner.port.to <= outer.port.to;
}

const toInt = (ip: string): number => ip.split('.').reduce((acc, part) => acc * 256 + Number(part), 0) >>> 0;
const toIp = (n: number): string => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');
