/**
 * `startHostEgress`: the daemon's whole egress enforcement in one object: the policy DNS resolver
 * (listening on every host address at `resolverPort`; slots reach it only through the port-53
 * redirect) wired to an {@link NftEgressEnforcer} (sandbox lookup by slot address, answers turned into
 * timed set elements before the reply), the table installed, and the watchdog running.
 */
import { readFile } from 'node:fs/promises';
import { PolicyDnsResolver } from './dns-resolver.js';
import type { DnsDeniedEvent, DnsErrorSource } from './dns-resolver-types.js';
import type { DnsUpstream } from './dns-upstream.js';
import { NftEgressEnforcer } from './nft-egress-enforcer.js';
import { DNS_SERVICE_ADDRESS, type SlotLayout } from '../slots.js';

export interface HostEgressOptions {
  /** Network prefix (same as the `NamespaceNetwork`'s). */
  prefix: string;
  layout: SlotLayout;
  /** Resolvers allowed names are forwarded to; default {@link hostNameservers}(). */
  upstreams?: DnsUpstream[];
  /** Resolver port on the host; default 0 (a free port, chosen at start). */
  resolverPort?: number;
  /** Table check interval; default 2000 ms. */
  watchIntervalMs?: number;
  onDenied?(event: DnsDeniedEvent): void;
  onError?(error: unknown, source: DnsErrorSource | 'watchdog'): void;
  onReinstall?(): void;
}

export interface HostEgress {
  enforcer: NftEgressEnforcer;
  resolver: PolicyDnsResolver;
  /** What sandboxes' resolv.conf must name. */
  dnsServiceAddress: string;
  /** Stop the watchdog and the resolver. The table stays (policies keep being enforced while the daemon is down). */
  close(): Promise<void>;
}

/**
 * Start the resolver, install the table, start the watchdog. Rejects `RUNTIME_UNAVAILABLE` when nft is
 * missing, `RUNTIME_ERROR` when the table cannot be installed, or the socket error of the resolver.
 */
export async function startHostEgress(options: HostEgressOptions): Promise<HostEgress> {
  await NftEgressEnforcer.checkAvailable();
  const upstreams = options.upstreams ?? (await defaultUpstreams());
  let enforcer: NftEgressEnforcer | undefined;
  const resolver = new PolicyDnsResolver({
    listenAddress: '0.0.0.0',
    port: options.resolverPort ?? 0,
    upstreams,
    sandboxForSource: (address) => enforcer?.dnsPolicyFor(address) ?? null,
    onAnswer: (event) => {
      if (!enforcer) throw new Error('egress enforcer not ready');
      return enforcer.grant(event);
    },
    ...(options.onDenied ? { onDenied: options.onDenied } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
  });
  const { port } = await resolver.start();
  try {
    enforcer = new NftEgressEnforcer({ prefix: options.prefix, layout: options.layout, resolverPort: port, dnsServiceAddress: DNS_SERVICE_ADDRESS });
    await enforcer.install();
  } catch (err) {
    await resolver.close();
    throw err;
  }
  const stop = enforcer.watch({
    ...(options.watchIntervalMs !== undefined ? { intervalMs: options.watchIntervalMs } : {}),
    ...(options.onReinstall ? { onReinstall: options.onReinstall } : {}),
    onError: (err) => options.onError?.(err, 'watchdog'),
  });
  return {
    enforcer,
    resolver,
    dnsServiceAddress: DNS_SERVICE_ADDRESS,
    close: async () => {
      stop();
      await resolver.close();
    },
  };
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
