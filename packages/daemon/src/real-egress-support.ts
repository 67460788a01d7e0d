/**
 * TEST SUPPORT for the real-egress suites (bypass, live update, restart, forks): the fake internet's
 * layout, packet logs kept by nftables in namespaces the tests own, a daemon in a child process (so a
 * test can `kill -9` it), slot lookup and the end-of-suite leftover check. Test support only.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { layoutForPrefix, NamespaceNetwork, run, runChecked, slotAddresses } from '@ramify/network';
import type { FakeEchoServer, FakeWebHost, FakeZone } from '@ramify/network/testing';

/** The names and addresses every real-egress suite uses (documentation ranges only). */
export const NET = {
  /** allowed.test and shared.test (a denied name) share this address. */
  allowed: '203.0.113.10',
  denied: '203.0.113.20',
  doh: '203.0.113.30',
  pkg: '203.0.113.40',
  /** Echo on 8080 (the `198.51.100.7:8080` rule) and on 9090 (not allowed). */
  echo: '198.51.100.7',
  /** Echo on 8080, named echo.test. */
  echoNamed: '198.51.100.8',
  /** The scripted upstream DNS server (also an echo on 853, standing in for DNS over TLS). */
  dns: '198.51.100.53',
} as const;

export const RIG_WEB: FakeWebHost[] = [
  { address: NET.allowed, names: ['allowed.test', 'shared.test'] },
  { address: NET.denied, names: ['denied.test'] },
  { address: NET.doh, names: ['doh.test'] },
  { address: NET.pkg, names: ['a.pkg.test', 'b.pkg.test'] },
];

export const RIG_ECHO: FakeEchoServer[] = [
  { address: NET.echo, port: 8080 },
  { address: NET.echo, port: 9090 },
  { address: NET.echoNamed, port: 8080 },
  { address: NET.dns, port: 853 },
  { address: NET.denied, port: 853 },
];

export const RIG_ZONE: FakeZone = {
  'allowed.test': { a: [NET.allowed], aaaa: ['2001:db8::10'], ttl: 300 },
  'shared.test': { a: [NET.allowed], ttl: 300 },
  'denied.test': { a: [NET.denied], ttl: 300 },
  'doh.test': { a: [NET.doh], ttl: 300 },
  'pkg.test': { a: [NET.pkg], ttl: 300 },
  'a.pkg.test': { a: [NET.pkg], ttl: 300 },
  'b.pkg.test': { a: [NET.pkg], ttl: 300 },
  'echo.test': { a: [NET.echoNamed], ttl: 300 },
};

/** The policy the bypass suites install: a name, a wildcard with a port, an address with a port. */
export const RULES = ['allowed.test', '*.pkg.test:443', '198.51.100.7:8080'];

/** One packet flow a {@link PacketLog} saw. `port` is null for protocols without ports. */
export interface Flow {
  source: string;
  destination: string;
  protocol: string;
  port: number | null;
}

/**
 * An nftables table of our own that records every IPv4 flow (source, destination, protocol, port) seen
 * at one hook, and counts IPv6 packets, in the host or in a namespace. Chains have policy accept and a
 * priority after the daemon's filter chains, so on the host's forward hook it records exactly what got
 * PAST enforcement (a drop is final; an accept lets later chains run).
 */
export class PacketLog {
  private constructor(private readonly table: string, private readonly netnsPath: string | null) {}

  /** Create table `inet <table>` (replacing a leftover) with one chain on `hook` for packets matching `match`. */
  static async start(spec: { table: string; netnsPath?: string; hook: 'prerouting' | 'forward' | 'input'; match?: string }): Promise<PacketLog> {
    const log = new PacketLog(spec.table, spec.netnsPath ?? null);
    const m = spec.match ?? '';
    await log.nft(['-f', '-'], [
      `table inet ${spec.table} {}`,
      `delete table inet ${spec.table}`,
      `table inet ${spec.table} {`,
      '  counter v6 {}',
      '  set flows { type ipv4_addr . ipv4_addr . inet_proto . inet_service; flags dynamic; size 65536; }',
      '  set other { type ipv4_addr . ipv4_addr . inet_proto; flags dynamic; size 65536; }',
      `  chain watch { type filter hook ${spec.hook} priority 50; policy accept;`,
      `    ${m} meta nfproto ipv4 meta l4proto { tcp, udp } add @flows { ip saddr . ip daddr . meta l4proto . th dport }`,
      `    ${m} meta nfproto ipv4 meta l4proto != { tcp, udp } add @other { ip saddr . ip daddr . meta l4proto }`,
      `    ${m} meta nfproto ipv6 ip6 saddr != fe80::/10 counter name v6`,
      '  }',
      '}',
    ].join('\n') + '\n');
    return log;
  }

  /** Every flow recorded since the start or the last {@link clear}. */
  async flows(): Promise<Flow[]> {
    const out: Flow[] = [];
    for (const set of ['flows', 'other']) {
      const json = JSON.parse(await this.nft(['-j', '-n', 'list', 'set', 'inet', this.table, set])) as { nftables: Array<{ set?: { elem?: unknown[] } }> };
      for (const elem of json.nftables.find((o) => o.set)?.set?.elem ?? []) {
        const e = elem as { concat?: unknown[]; elem?: { val?: { concat?: unknown[] } } };
        const [source, destination, protocol, port] = (e.concat ?? e.elem?.val?.concat ?? []) as Array<string | number>;
        out.push({ source: String(source), destination: String(destination), protocol: protoName(protocol), port: port === undefined ? null : Number(port) });
      }
    }
    return out;
  }

  /** IPv6 packets (not link-local) counted. */
  async ipv6Packets(): Promise<number> {
    const json = JSON.parse(await this.nft(['-j', 'list', 'counter', 'inet', this.table, 'v6'])) as { nftables: Array<{ counter?: { packets: number } }> };
    return json.nftables.find((o) => o.counter)?.counter?.packets ?? 0;
  }

  async clear(): Promise<void> {
    await this.nft(['-f', '-'], `flush set inet ${this.table} flows\nflush set inet ${this.table} other\nreset counter inet ${this.table} v6\n`);
  }

  /** Delete the table (a no-op when it, or its namespace, is gone). */
  async stop(): Promise<void> {
    if (this.netnsPath) await run(['nsenter', `--net=${this.netnsPath}`, 'nft', 'delete', 'table', 'inet', this.table]);
    else await run(['nft', 'delete', 'table', 'inet', this.table]);
  }

  private nft(args: string[], input?: string): Promise<string> {
    return runChecked(this.netnsPath ? ['nsenter', `--net=${this.netnsPath}`, 'nft', ...args] : ['nft', ...args], input);
  }
}

const protoName = (p: string | number | undefined): string => (p === 1 ? 'icmp' : p === 6 ? 'tcp' : p === 17 ? 'udp' : String(p));

/** Flows to `address` (and `port`, when given). */
export const flowsTo = (flows: readonly Flow[], address: string, port?: number): Flow[] =>
  flows.filter((f) => f.destination === address && (port === undefined || f.port === port));

const DAEMON_MAIN = fileURLToPath(new URL('./real-egress-daemon.js', import.meta.url));

/** What {@link ChildDaemon.start} needs; the same values on every restart. */
export interface ChildDaemonSpec {
  dataDir: string;
  prefix: string;
  /** The fake internet's DNS server: the policy resolver's only upstream. */
  upstream: string;
  rootfs: string;
  /** `serve({ warmPool })` (default off). */
  warmPool?: string;
}

/**
 * `serve()` in a child process (see real-egress-daemon.ts), so a test can kill it with SIGKILL and
 * start another on the same data directory. The API key is made on the first start and kept.
 */
export class ChildDaemon {
  url = '';
  key = '';
  private child: ChildProcess | undefined;
  private stderr = '';

  constructor(readonly spec: ChildDaemonSpec) {}

  /** Start a daemon; resolves once it listens (after its reconcile), rejects with its stderr if it exits. */
  async start(): Promise<void> {
    assert.equal(this.child, undefined, 'a daemon is already running');
    const child = spawn(process.execPath, [DAEMON_MAIN, JSON.stringify(this.spec)], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.stderr = (this.stderr + d).slice(-20_000)));
    const ready = await new Promise<{ url: string; key: string | null }>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', (line) => resolve(JSON.parse(line) as { url: string; key: string | null }));
      child.once('exit', (code, signal) => reject(new Error(`daemon exited (${signal ?? code}) before listening: ${this.stderr}`)));
    });
    this.url = ready.url;
    if (ready.key) this.key = ready.key;
  }

  /** SIGKILL: no cleanup of any kind (sandboxes keep running; the nftables table stays). */
  async kill9(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  /** SIGTERM: the child deletes every sandbox, closes, and removes its namespaces and table. SIGKILL after `graceMs`. */
  async stop(graceMs = 120_000): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }

  /** The daemon's recent stderr (its warn/error log), for failure messages. */
  log(): string {
    return this.stderr;
  }
}

/** The runsc state directory of a daemon's data directory. */
const runscRoot = (dataDir: string): string => join(dataDir, 'runtime', 'gvisor', 'state');

/** The slot, slot address and host-side address of a sandbox (from its runtime instance file). */
export async function slotOf(dataDir: string, prefix: string, sandboxId: string): Promise<{ slot: number; slotAddress: string; hostAddress: string }> {
  const instance = JSON.parse(await readFile(join(dataDir, 'runtime', 'gvisor', 'bundles', sandboxId, 'instance.json'), 'utf8')) as { netnsPath: string };
  const slot = Number(new RegExp(`/${prefix}-s(\\d+)$`).exec(instance.netnsPath)?.[1]);
  assert.ok(Number.isInteger(slot), `no slot in ${instance.netnsPath}`);
  return { slot, ...slotAddresses(layoutForPrefix(prefix), slot) };
}

/** The host's own IPv4 addresses on its default-route interface (where "the host" is reachable from outside). */
export async function hostMainAddresses(): Promise<string[]> {
  const route = await runChecked(['ip', '-o', '-4', 'route', 'show', 'default']);
  const dev = /\bdev (\S+)/.exec(route)?.[1];
  if (!dev) return [];
  const addrs = await runChecked(['ip', '-o', '-4', 'addr', 'show', 'dev', dev]);
  return [...addrs.matchAll(/inet (\d+\.\d+\.\d+\.\d+)\//g)].map((m) => m[1]!);
}

/** The resolver port the daemon's table redirects port 53 to (read from the table). */
export async function resolverPort(prefix: string): Promise<number> {
  const table = await runChecked(['nft', 'list', 'table', 'inet', prefix]);
  const port = Number(/th dport 53 redirect to :(\d+)/.exec(table)?.[1]);
  assert.ok(port > 0, 'the table redirects port 53');
  return port;
}

/**
 * Last-resort cleanup after a failed run: kill containers left in the data directory's runsc root,
 * and remove every namespace, veth and table of `prefix`.
 */
export async function forceCleanup(prefix: string, dataDir: string): Promise<void> {
  const list = await run(['runsc', '--root', runscRoot(dataDir), 'list', '-quiet']);
  for (const id of list.stdout.split('\n').filter(Boolean)) await run(['runsc', '--root', runscRoot(dataDir), 'delete', '-force', id]);
  await new NamespaceNetwork({ prefix }).destroyAll();
}

/** What of `prefix` is still on the host: namespaces, links, nftables tables, and containers of `dataDir`. */
export async function leftovers(prefix: string, dataDir: string, extraTables: readonly string[] = []): Promise<string[]> {
  const found: string[] = [];
  const netns = await run(['ip', 'netns', 'list']);
  found.push(...netns.stdout.split('\n').map((l) => l.split(' ')[0] ?? '').filter((n) => n.startsWith(`${prefix}-`)).map((n) => `netns ${n}`));
  const links = await run(['ip', '-o', 'link', 'show']);
  found.push(...[...links.stdout.matchAll(/^\d+: ([^:@\s]+)/gm)].map((m) => m[1]!).filter((n) => n.startsWith(prefix)).map((n) => `link ${n}`));
  const tables = await run(['nft', 'list', 'tables']);
  const names = new Set([prefix, ...extraTables]);
  found.push(...tables.stdout.split('\n').filter((l) => names.has(l.trim().split(' ').pop() ?? '')).map((l) => l.trim()));
  const list = await run(['runsc', '--root', runscRoot(dataDir), 'list', '-quiet']);
  found.push(...list.stdout.split('\n').filter(Boolean).map((id) => `container ${id}`));
  return found;
}

/**
 * The static set elements the daemon's table holds for one slot (sets `spoof`, `open`, `net`, `netport`;
 * not the DNS-learned ones, which come and go with lookups), as sorted JSON strings.
 */
export async function slotElements(prefix: string, slotAddress: string): Promise<string[]> {
  const out: string[] = [];
  for (const set of ['spoof', 'open', 'net', 'netport']) {
    const json = JSON.parse(await runChecked(['nft', '-j', 'list', 'set', 'inet', prefix, set])) as { nftables: Array<{ set?: { elem?: unknown[] } }> };
    for (const elem of json.nftables.find((o) => o.set)?.set?.elem ?? []) {
      const text = JSON.stringify(elem);
      if (text.includes(`"${slotAddress}"`)) out.push(`${set} ${text}`);
    }
  }
  return out.sort();
}

/**
 * Fail fast when another daemon's interfaces hold addresses in `prefix`'s slot range: `layoutForPrefix`
 * maps prefixes onto only 52 ranges, and two daemons on one range silently misroute each other's replies.
 */
export async function assertSlotRangeFree(prefix: string): Promise<void> {
  const range = `${layoutForPrefix(prefix).slotBase}/16`;
  const out = await runChecked(['ip', '-o', '-4', 'addr', 'show', 'to', range]);
  const foreign = out.split('\n').filter(Boolean).map((l) => l.split(/\s+/)[1] ?? '').filter((dev) => !dev.startsWith(prefix));
  assert.deepEqual(foreign, [], `the slot range ${range} of prefix '${prefix}' is already used by other interfaces (another daemon's prefix hashes to it)`);
}
