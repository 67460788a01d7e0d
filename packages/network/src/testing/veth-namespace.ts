/**
 * Test-only network namespaces joined to the host by one veth pair on a /30 link: host side `.1`,
 * namespace side `.2` (as `eth0`, default route via the host). IPv6 is disabled inside.
 * Names: namespace and host interface share one name (`<prefix>-<role>`), the namespace end is created
 * as `<name>p` and renamed `eth0`.
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { RamifyError } from '@ramify/contracts';
import { run, runChecked, type RunResult } from '../exec.js';

const NETNS_DIR = '/var/run/netns';

/** How to build one {@link VethNamespace}. */
export interface VethNamespaceSpec {
  /** Namespace and host interface name, ≤ 14 characters (the namespace end gets a `p` suffix). */
  name: string;
  /** Network address of the /30 link, e.g. `10.196.7.4`. */
  link: string;
  /** Extra /32 addresses on the namespace's `eth0`; the host routes each of them into the namespace. */
  addresses?: string[];
}

/** A namespace made by {@link VethNamespace.create}. */
export class VethNamespace {
  readonly name: string;
  readonly netnsPath: string;
  /** Host side of the link. */
  readonly hostAddress: string;
  /** Namespace side of the link (the namespace's source address for traffic it starts). */
  readonly address: string;
  /** Extra addresses routed into the namespace. */
  readonly addresses: readonly string[];

  private constructor(spec: VethNamespaceSpec, hostAddress: string, address: string) {
    this.name = spec.name;
    this.netnsPath = `${NETNS_DIR}/${spec.name}`;
    this.hostAddress = hostAddress;
    this.address = address;
    this.addresses = [...(spec.addresses ?? [])];
  }

  /**
   * Create the namespace, veth pair, addresses and host routes. Rejects `CONFLICT` when the name is
   * taken or an extra address is already routed elsewhere than into this namespace (nothing is
   * left behind then), `RUNTIME_ERROR` when a command fails.
   */
  static async create(spec: VethNamespaceSpec): Promise<VethNamespace> {
    if (!/^[a-z][a-z0-9-]{1,13}$/.test(spec.name)) throw new RangeError(`namespace name '${spec.name}' must be 2-14 of [a-z0-9-]`);
    const base = spec.link.split('.').map(Number);
    if (base.length !== 4 || base.some((n) => !Number.isInteger(n) || n < 0 || n > 255) || base[3]! % 4 !== 0) {
      throw new RangeError(`link '${spec.link}' must be the network address of a /30`);
    }
    const at = (last: number): string => [base[0], base[1], base[2], base[3]! + last].join('.');
    const ns = new VethNamespace(spec, at(1), at(2));
    if (existsSync(ns.netnsPath)) throw new RamifyError('CONFLICT', `network namespace ${spec.name} already exists`);
    for (const address of ns.addresses) {
      const route = await run(['ip', '-o', '-4', 'route', 'get', address]);
      if (/^(local|broadcast) /.test(route.stdout)) throw new RamifyError('CONFLICT', `${address} is an address of this host`);
    }
    const peer = `${spec.name}p`;
    try {
      await runChecked(['ip', '-batch', '-'], [
        `netns add ${spec.name}`,
        `link add ${spec.name} type veth peer name ${peer}`,
        `link set ${peer} netns ${spec.name}`,
        `addr add ${ns.hostAddress}/30 dev ${spec.name}`,
        `link set ${spec.name} up`,
      ].join('\n') + '\n');
      await runChecked(['nsenter', `--net=${ns.netnsPath}`, 'sh', '-c',
        'echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 && echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6']);
      await runChecked(['ip', '-n', spec.name, '-batch', '-'], [
        'link set lo up',
        `link set ${peer} name eth0`,
        `addr add ${ns.address}/30 dev eth0`,
        ...ns.addresses.map((a) => `addr add ${a}/32 dev eth0`),
        'link set eth0 up',
        `route add default via ${ns.hostAddress}`,
      ].join('\n') + '\n');
      // `route add` (not replace): fails instead of taking over a route someone else made.
      if (ns.addresses.length > 0) {
        await runChecked(['ip', '-batch', '-'], ns.addresses.map((a) => `route add ${a}/32 via ${ns.address} dev ${spec.name}`).join('\n') + '\n');
      }
      for (const address of ns.addresses) {
        const route = await runChecked(['ip', '-o', '-4', 'route', 'get', address]);
        if (!route.includes(` dev ${spec.name} `)) throw new RamifyError('CONFLICT', `${address} does not route into ${spec.name}: ${route.trim()}`);
      }
    } catch (err) {
      await ns.destroy();
      throw err;
    }
    return ns;
  }

  /** Run `argv` inside the namespace (`nsenter --net`); resolves with output and exit code. */
  exec(argv: string[], input?: string): Promise<RunResult> {
    return run(['nsenter', `--net=${this.netnsPath}`, ...argv], input);
  }

  /** Spawn `argv` inside the namespace. */
  spawn(argv: string[], options: SpawnOptions = {}): ChildProcess {
    return spawn('nsenter', [`--net=${this.netnsPath}`, ...argv], options);
  }

  /** Remove the namespace; its veth and the host routes through it go with it. Idempotent. */
  async destroy(): Promise<void> {
    await destroyVethNamespace(this.name);
  }
}

/** Remove namespace `name` and host interface `name` (and with it the routes through it). Idempotent. */
export async function destroyVethNamespace(name: string): Promise<void> {
  await run(['ip', 'netns', 'delete', name]);
  await run(['ip', 'link', 'delete', name]);
}

/** Names of existing namespaces that match `pattern`. */
export async function listNamespaces(pattern: RegExp): Promise<string[]> {
  const names = existsSync(NETNS_DIR) ? await readdir(NETNS_DIR) : [];
  return names.filter((n) => pattern.test(n));
}
