/**
 * `startHostEgress`: the daemon's whole egress enforcement in one object:
 * - the slot → policy table ({@link SlotPolicies}), made first: the resolver, the proxy and the egress log
 *   find the sandbox behind a slot address there, and the {@link NftEgressEnforcer} writes it;
 * - the policy DNS resolver (listening on every host address at `resolverPort`; slots reach it only
 *   through the port-53 redirect), whose answers the enforcer turns into timed set elements before the reply;
 * - private networks ({@link NftPrivateNetworks}: pairs of slots in the same table, written in the enforcer's
 *   queue; the resolver answers `<alias>.<network>.internal` from their directory, and never upstream);
 * - the SNI/Host proxy ({@link EgressProxy}, one listener per original port 80/443 on every host address;
 *   allowlist-mode slots reach it only through the table's redirect); it resolves allowed names through the
 *   same upstreams and is re-checked after every policy change (connections no longer allowed are cut);
 * - the table installed (with the redirect and the NFLOG statements), the route guard (slot traffic the table has
 *   not marked is refused by routing, so a flushed table fails closed even while the daemon is down) and the
 *   watchdog running;
 * - with `onVerdict`: the egress log's verdicts from the resolver, the proxy and the nftables log (read by a
 *   `ulogd` child process; without ulogd only resolver and proxy verdicts, and a warning through `onError`).
 */
import { readFile } from 'node:fs/promises';
import { ruleForName, type EgressVerdict } from '@ramify/core';
import { PolicyDnsResolver } from './dns/dns-resolver.js';
import type { DnsDeniedEvent, DnsErrorSource } from './dns/dns-resolver-types.js';
import type { DnsUpstream } from './dns/dns-upstream.js';
import { EgressProxy, type EgressProxyDecision } from './proxy/egress-proxy.js';
import { EgressVerdicts } from './proxy/egress-verdicts.js';
import { NflogReader } from './nft/nflog-reader.js';
import { NftEgressEnforcer } from './nft/nft-egress-enforcer.js';
import { nflogGroupFor } from './nft/nft-ruleset.js';
import { UpstreamNameResolver } from './dns/upstream-name-resolver.js';
import { matchConnection } from './policy/policy-match.js';
import { SlotPolicies, type SlotPolicyReader } from './policy/slot-policies.js';
import { policyAtSource } from './policy/source-policy.js';
import { DNS_SERVICE_ADDRESS, type SlotLayout } from '../slots.js';
import { internalZone } from '../private/internal-zone.js';
import { NetworkDirectory, type NetworkDirectoryReader } from '../private/network-directory.js';
import { NftPrivateNetworks, peerElements } from '../private/nft-private-networks.js';

/** Where an error reported to `onError` came from. */
export type HostEgressErrorSource = DnsErrorSource | 'watchdog' | 'proxy' | 'nflog' | 'verdict' | 'policy-change';

export interface HostEgressOptions {
  /** Network prefix (same as the `NamespaceNetwork`'s). */
  prefix: string;
  layout: SlotLayout;
  /** Resolvers allowed names are forwarded to (by the DNS resolver and the proxy); default {@link hostNameservers}(). */
  upstreams?: DnsUpstream[];
  /** Resolver port on the host; default 0 (a free port, chosen at start). */
  resolverPort?: number;
  /** Host ports of the proxy's listeners for original ports 80 (`http`) and 443 (`tls`); default 0 each (free ports). */
  proxyPorts?: { http?: number; tls?: number };
  /** Table check interval; default 2000 ms. */
  watchIntervalMs?: number;
  /** Mark bit of the route guard; default `ROUTE_GUARD_MARK` (0x20000000). */
  guardMark?: number;
  /**
   * Every verdict for the egress log (not awaited; a throw goes to `onError` as `verdict`). When given, the
   * nftables log is read through a `ulogd` child process (stopped by `close`).
   */
  onVerdict?(verdict: EgressVerdict): void;
  /** Reading the nftables log (only with `onVerdict`). */
  nflog?: {
    /** NFLOG group; default {@link nflogGroupFor}(prefix). */
    group?: number;
    /** Directory for ulogd's config, socket and pid file; default `/run/ramify/egress-<prefix>`. */
    runDir?: string;
    /** The ulogd binary; default found in /usr/sbin, /usr/local/sbin, /sbin. */
    ulogdPath?: string;
  };
  onDenied?(event: DnsDeniedEvent): void;
  /** Every decision of the SNI/Host proxy, with its reason (not awaited). */
  onProxyDecision?(decision: EgressProxyDecision): void;
  onError?(error: unknown, source: HostEgressErrorSource): void;
  onReinstall?(): void;
}

export interface HostEgress {
  enforcer: NftEgressEnforcer;
  /** Private networks on the same table (core's `PrivateNetworkEnforcer`). */
  networks: NftPrivateNetworks;
  /** Who is on which private network (what the resolver's `.internal` zone and the egress log read). */
  directory: NetworkDirectoryReader;
  /** The slot → policy table the enforcer writes (which sandbox holds a slot, under which policy). */
  slots: SlotPolicyReader;
  resolver: PolicyDnsResolver;
  proxy: EgressProxy;
  /** The proxy's host ports (what the table redirects 80 and 443 to). */
  proxyPorts: { http: number; tls: number };
  /** The NFLOG group the table logs to. */
  nflogGroup: number;
  /** The ulogd reader, or null (no `onVerdict`, or ulogd missing or failing to start). */
  nflog: NflogReader | null;
  /** What sandboxes' resolv.conf must name. */
  dnsServiceAddress: string;
  /**
   * Stop the watchdog, ulogd, the proxy (its connections are cut) and the resolver. The table and the route
   * guard stay (policies keep being enforced while the daemon is down; proxied ports then go nowhere; if the
   * table is flushed meanwhile, slot traffic is refused until the table is back).
   */
  close(): Promise<void>;
}

/** Socket errors of single client or upstream connections: routine, not worth a warning. */
const ROUTINE_SOCKET_ERRORS = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ETIMEDOUT', 'ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Start the resolver and the proxy, install the table, start the watchdog and (with `onVerdict`) ulogd.
 * Rejects `RUNTIME_UNAVAILABLE` when nft is missing, `RUNTIME_ERROR` when the table or the route guard cannot be installed, or
 * the socket error of a listener; nothing is left running then. A missing or failing ulogd does not fail it.
 */
export async function startHostEgress(options: HostEgressOptions): Promise<HostEgress> {
  await NftEgressEnforcer.checkAvailable();
  const upstreams = options.upstreams ?? (await defaultUpstreams());
  const report = (source: HostEgressErrorSource) => (err: unknown): void => options.onError?.(err, source);
  const slots = new SlotPolicies(options.layout);
  // Private networks: their directory is read by the resolver (`.internal`) and the log, written by `networks`.
  const directory = new NetworkDirectory();
  // The one part wired late: the enforcer's table redirects to the resolver's and the proxy's ports, known only
  // once they listen, and it is the enforcer that opens the resolver's answers. No answer comes before it exists:
  // the resolver answers only sources in `slots`, and only the enforcer fills `slots`.
  let enforcer: NftEgressEnforcer | undefined;
  const verdicts = new EgressVerdicts({
    prefix: options.prefix,
    slots,
    networks: directory,
    emit: (v) => options.onVerdict?.(v),
    onError: report('verdict'),
    intentWaitMs: 0,
  });
  const logging = options.onVerdict !== undefined;
  const resolver = new PolicyDnsResolver({
    listenAddress: '0.0.0.0',
    port: options.resolverPort ?? 0,
    upstreams,
    // A name is allowed by the first `*`/host/wildcard rule naming it (ports play no part).
    sandboxForSource: (address) => policyAtSource(slots, address, ruleForName),
    localZone: internalZone(directory),
    onAnswer: async (event) => {
      if (!enforcer) throw new Error('egress enforcer not ready');
      await enforcer.grant(event);
      if (logging) verdicts.dnsAnswered(event);
    },
    onDenied: (event) => {
      options.onDenied?.(event);
      if (logging) verdicts.dnsDenied(event);
    },
    onFailed: (event) => {
      if (logging) verdicts.dnsFailed(event);
    },
    onError: (err, source) => options.onError?.(err, source),
  });
  const names = new UpstreamNameResolver({ upstreams });
  const proxy = new EgressProxy({
    // A name is allowed on a port by the first `*`/host/wildcard rule naming it with that port (or without a
    // port); address rules never allow a name.
    policyForSource: (address) => policyAtSource(slots, address, (policy, name: string, port: number) => matchConnection(policy, { port, names: [name] })?.rule ?? null),
    resolve: (name) => names.resolve(name),
    onDecision: (decision) => {
      options.onProxyDecision?.(decision);
      if (logging) verdicts.proxyDecision(decision);
    },
    onError: (err) => {
      if (!ROUTINE_SOCKET_ERRORS.has((err as NodeJS.ErrnoException)?.code ?? '')) options.onError?.(err, 'proxy');
    },
  });
  const { port } = await resolver.start();
  let stopWatch = (): void => undefined;
  let nflog: NflogReader | null = null;
  const closeAll = async (): Promise<void> => {
    stopWatch();
    await nflog?.close();
    await proxy.close();
    await resolver.close();
  };
  try {
    const proxyPorts = {
      http: (await proxy.listen({ address: '0.0.0.0', port: options.proxyPorts?.http ?? 0, protocol: 'http', originalPort: 80 })).port,
      tls: (await proxy.listen({ address: '0.0.0.0', port: options.proxyPorts?.tls ?? 0, protocol: 'tls', originalPort: 443 })).port,
    };
    const nflogGroup = options.nflog?.group ?? nflogGroupFor(options.prefix);
    enforcer = new NftEgressEnforcer({
      prefix: options.prefix,
      slots,
      resolverPort: port,
      dnsServiceAddress: DNS_SERVICE_ADDRESS,
      proxyPorts,
      nflogGroup,
      ...(options.guardMark !== undefined ? { guardMark: options.guardMark } : {}),
      onChange: () => proxy.revalidate(),
      onChangeError: report('policy-change'),
      extraElements: () => peerElements(directory),
    });
    const egressEnforcer = enforcer;
    const networks = new NftPrivateNetworks({
      prefix: options.prefix, directory, addressOf: (slot) => slots.addressOf(slot), exclusive: (change) => egressEnforcer.exclusive(change),
    });
    await enforcer.install();
    if (logging) {
      nflog = await NflogReader.start({
        prefix: options.prefix,
        group: nflogGroup,
        runDir: options.nflog?.runDir ?? `/run/ramify/egress-${options.prefix}`,
        ...(options.nflog?.ulogdPath ? { ulogdPath: options.nflog.ulogdPath } : {}),
        onPacket: (packet) => verdicts.packet(packet),
        onError: report('nflog'),
      }).catch((err: unknown) => {
        options.onError?.(err, 'nflog');
        return null;
      });
      if (nflog) verdicts.setIntentWaitMs(500);
    }
    stopWatch = enforcer.watch({
      ...(options.watchIntervalMs !== undefined ? { intervalMs: options.watchIntervalMs } : {}),
      ...(options.onReinstall ? { onReinstall: options.onReinstall } : {}),
      onError: report('watchdog'),
    });
    return { enforcer, networks, directory, slots, resolver, proxy, proxyPorts, nflogGroup, nflog, dnsServiceAddress: DNS_SERVICE_ADDRESS, close: closeAll };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/**
 * The host's nameservers; when /etc/resolv.conf names only a loopback stub (systemd-resolved), the stub's
 * own upstreams from /run/systemd/resolve/resolv.conf.
 */
async function defaultUpstreams(): Promise<DnsUpstream[]> {
  const direct = await hostNameservers();
  return direct.length > 0 ? direct : hostNameservers('/run/systemd/resolve/resolv.conf');
}

/** The host's IPv4 nameservers from /etc/resolv.conf, without loopback stubs (a sandbox never uses those). */
export async function hostNameservers(path = '/etc/resolv.conf'): Promise<DnsUpstream[]> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text
    .split('\n')
    .map((line) => /^\s*nameserver\s+(\d+\.\d+\.\d+\.\d+)\s*$/.exec(line)?.[1])
    .filter((ip): ip is string => ip !== undefined && !ip.startsWith('127.'))
    .map((address) => ({ address }));
}
