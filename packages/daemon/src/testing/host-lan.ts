/**
 * A LAN of "machines" on one machine, for multi-host tests: a bridge in the root network namespace
 * holding the services' address (Postgres, S3), and per host a network namespace joined to it by a veth
 * pair, with its own address and a default route through the bridge. What one host's daemon makes
 * (its slot namespaces' veths, its nftables tables, its listeners) lives in its namespace and cannot
 * collide with another's; the hosts reach the services and each other over the bridge, and nothing
 * beyond the bridge is reachable from outside (private addresses, no forwarding set up for them).
 *
 *   [root ns]  bridge `<p>br0` 10.199.0.1/24 (Postgres, s3rver, the API process)
 *       |-- veth `<p>v1` ==== eth0 10.199.0.11/24 in netns `<p>-h1` (host 1)
 *       |-- veth `<p>v2` ==== eth0 10.199.0.12/24 in netns `<p>-h2` (host 2) ...
 *
 * 10.199/16 lies outside the daemon's slot ranges (10.200-10.251, 10.253, 10.254). Test support only.
 * Commands run from argv arrays; every step is undone by {@link HostLan.remove}, also after a failure.
 */
import { spawnSync } from 'node:child_process';

/** One host's namespace on the LAN. */
export interface LanHost {
  /** 1-based index. */
  index: number;
  /** Network namespace name (`ip netns exec <netns> ...`). */
  netns: string;
  /** Its address on the LAN. */
  address: string;
}

export interface HostLan {
  /** The bridge's address in the root namespace: where the services listen. */
  serviceAddress: string;
  /** The LAN in CIDR (for Postgres' pg_hba). */
  cidr: string;
  hosts: LanHost[];
  /** Delete every namespace, veth and the bridge (idempotent). */
  remove(): void;
}

/** `ip ...` with argv; @throws Error with its stderr when it fails. */
export function ip(args: string[]): string {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr.trim() || `exit ${r.status}`}`);
  return r.stdout;
}

/** Names of the LAN's objects under `prefix` (1-3 lowercase letters: interface names stay under 15 bytes). */
export function lanNames(prefix: string): { bridge: string; netns(index: number): string; veth(index: number): string } {
  return { bridge: `${prefix}br0`, netns: (i) => `${prefix}-h${i}`, veth: (i) => `${prefix}v${i}` };
}

/**
 * Make the bridge and `count` host namespaces under `prefix` (e.g. `rcx`), after removing leftovers of
 * an earlier run with the same prefix. @throws Error when `ip` fails (what was made is removed first).
 */
export function createHostLan(prefix: string, count: number): HostLan {
  if (!/^[a-z]{1,3}$/.test(prefix)) throw new RangeError(`LAN prefix '${prefix}' must be 1-3 lowercase letters`);
  const names = lanNames(prefix);
  const serviceAddress = '10.199.0.1';
  const hosts: LanHost[] = Array.from({ length: count }, (_, k) => ({ index: k + 1, netns: names.netns(k + 1), address: `10.199.0.${11 + k}` }));
  const remove = (): void => {
    for (const host of hosts) {
      spawnSync('ip', ['netns', 'delete', host.netns]);
      spawnSync('ip', ['link', 'delete', names.veth(host.index)]);
    }
    spawnSync('ip', ['link', 'delete', names.bridge]);
  };
  remove();
  try {
    ip(['link', 'add', names.bridge, 'type', 'bridge']);
    ip(['addr', 'add', `${serviceAddress}/24`, 'dev', names.bridge]);
    ip(['link', 'set', names.bridge, 'up']);
    for (const host of hosts) {
      const inNs = (args: string[]): string => ip(['-n', host.netns, ...args]);
      ip(['netns', 'add', host.netns]);
      ip(['link', 'add', names.veth(host.index), 'type', 'veth', 'peer', 'name', 'eth0', 'netns', host.netns]);
      ip(['link', 'set', names.veth(host.index), 'master', names.bridge, 'up']);
      inNs(['link', 'set', 'lo', 'up']);
      inNs(['addr', 'add', `${host.address}/24`, 'dev', 'eth0']);
      inNs(['link', 'set', 'eth0', 'up']);
      inNs(['route', 'add', 'default', 'via', serviceAddress]);
    }
  } catch (err) {
    remove();
    throw err;
  }
  return { serviceAddress, cidr: '10.199.0.0/24', hosts, remove };
}

/** What of the LAN under `prefix` is left in the root namespace: namespaces and links named after it. */
export function lanLeftovers(prefix: string): string[] {
  const names = lanNames(prefix);
  const netns = ip(['netns', 'list']).split('\n').map((l) => l.split(' ')[0] ?? '').filter((n) => n.startsWith(`${prefix}-`));
  const links = ip(['-br', 'link']).split('\n').map((l) => (l.split(/\s+/)[0] ?? '').split('@')[0] ?? '').filter((n) => n === names.bridge || new RegExp(`^${prefix}v\\d+$`).test(n));
  return [...netns.map((n) => `netns ${n}`), ...links.map((n) => `link ${n}`)];
}
