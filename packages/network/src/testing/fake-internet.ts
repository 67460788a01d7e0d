/**
 * `FakeInternet`: a test rig that stands in for the internet. One namespace `<prefix>-inet`, joined to
 * the host by a veth, holds addresses on documentation ranges (the host routes each of them, as a /32,
 * into the namespace) and runs, as a separate process under `nsenter`:
 * HTTP and HTTPS servers (one self-signed certificate for every name), TCP echo servers and a scripted
 * DNS server (UDP and TCP). Every connection, TLS handshake (with SNI), HTTP request (with Host), close
 * and DNS query is reported as a {@link FakeInternetEvent}.
 *
 * Client namespaces (`<prefix>-c<name>`) made with {@link FakeInternet.addClient} reach the rig and
 * the host through their own veth. Link addresses come from one /24 per prefix (default
 * `10.196.<hash of prefix>.0/24`): the rig link is its first /30, client `k` the `k+1`-th.
 * Everything is removed by {@link FakeInternet.teardown}; {@link FakeInternet.cleanup} removes leftovers
 * of a crashed run. Nothing is sent anywhere but into these namespaces.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { generate } from 'selfsigned';
import { RamifyError } from '@ramify/contracts';
import { run } from '../exec.js';
import { DEFAULT_FAKE_DNS, DEFAULT_FAKE_ECHO, DEFAULT_FAKE_WEB_HOSTS, DEFAULT_FAKE_ZONE } from './fake-internet-defaults.js';
import type { FakeEchoServer, FakeInternetEvent, FakeInternetEventKind, FakeInternetServerConfig, FakeWebHost, FakeZone } from './fake-internet-types.js';
import { destroyVethNamespace, listNamespaces, VethNamespace } from './veth-namespace.js';

export interface FakeInternetOptions {
  /** 2-5 lowercase letters; every namespace and host interface is named `<prefix>-…`. Default `rmqi`. */
  prefix?: string;
  /** Network address of the /24 the links use; default `10.196.<hash of prefix>.0`. */
  linkRange?: string;
  /** Default {@link DEFAULT_FAKE_WEB_HOSTS}. */
  web?: FakeWebHost[];
  /** Default {@link DEFAULT_FAKE_ECHO}. */
  echo?: FakeEchoServer[];
  /** Default {@link DEFAULT_FAKE_DNS}. */
  dns?: { address: string; port?: number };
  /** Default {@link DEFAULT_FAKE_ZONE}. */
  zone?: FakeZone;
  /** Limit for the servers to come up; default 10000 ms. */
  readyTimeoutMs?: number;
}

const SERVER_SCRIPT = fileURLToPath(new URL('./fake-internet-server.js', import.meta.url));
const MAX_CLIENTS = 63;

type EventOf<K extends FakeInternetEventKind> = Extract<FakeInternetEvent, { kind: K }>;

export class FakeInternet {
  readonly prefix: string;
  /** The rig namespace. */
  readonly namespace: VethNamespace;
  readonly web: ReadonlyArray<Required<FakeWebHost>>;
  readonly echo: readonly FakeEchoServer[];
  readonly dns: { address: string; port: number };
  readonly zone: FakeZone;
  /** The HTTPS certificate (self-signed, covers every web name and address): pass as `ca` to trust it. */
  readonly certPem: string;
  private readonly server: ChildProcess;
  private readonly tmpDir: string;
  private readonly linkRange: number[];
  private readonly clients = new Map<string, VethNamespace>();
  private received: FakeInternetEvent[] = [];
  private readonly listeners = new Set<(e: FakeInternetEvent) => void>();
  private readonly flushes = new Map<number, () => void>();
  private nextFlush = 1;
  private exited: string | null = null;

  private constructor(init: { prefix: string; namespace: VethNamespace; config: FakeInternetServerConfig; server: ChildProcess; tmpDir: string; linkRange: number[] }) {
    this.prefix = init.prefix;
    this.namespace = init.namespace;
    this.web = init.config.web;
    this.echo = init.config.echo;
    this.dns = init.config.dns;
    this.zone = init.config.zone;
    this.certPem = init.config.tls.certPem;
    this.server = init.server;
    this.tmpDir = init.tmpDir;
    this.linkRange = init.linkRange;
  }

  /**
   * Build the rig and start its servers. Leftovers of an earlier run with the same prefix are removed
   * first. Rejects `CONFLICT` when the link range or a served address is already in use on the host,
   * `RUNTIME_ERROR` when the servers do not come up; nothing is left behind on failure.
   */
  static async start(options: FakeInternetOptions = {}): Promise<FakeInternet> {
    const prefix = options.prefix ?? 'rmqi';
    if (!/^[a-z]{2,5}$/.test(prefix)) throw new RangeError(`rig prefix '${prefix}' must be 2-5 lowercase letters`);
    await FakeInternet.cleanup(prefix);
    const linkRange = (options.linkRange ?? defaultLinkRange(prefix)).split('.').map(Number);
    const range = `${linkRange.join('.')}/24`;
    const used = await run(['ip', '-o', '-4', 'route', 'show', 'root', range]);
    const addrs = await run(['ip', '-o', '-4', 'addr', 'show', 'to', range]);
    if (used.stdout.trim() || addrs.stdout.trim()) throw new RamifyError('CONFLICT', `link range ${range} is already in use on this host`);

    const web = (options.web ?? DEFAULT_FAKE_WEB_HOSTS).map((h) => ({ httpPort: 80, httpsPort: 443, ...h, names: [...h.names] }));
    const echo = [...(options.echo ?? DEFAULT_FAKE_ECHO)];
    const dns = { address: options.dns?.address ?? DEFAULT_FAKE_DNS.address, port: options.dns?.port ?? DEFAULT_FAKE_DNS.port };
    const addresses = [...new Set([...web.map((h) => h.address), ...echo.map((e) => e.address), dns.address])];
    const altNames = [...web.flatMap((h) => h.names.map((value) => ({ type: 2 as const, value }))), ...web.map((h) => ({ type: 7 as const, ip: h.address }))];
    const pems = await generate([{ name: 'commonName', value: web[0]?.names[0] ?? 'fake.test' }], {
      keyType: 'ec',
      algorithm: 'sha256',
      extensions: [
        { name: 'basicConstraints', cA: true },
        { name: 'keyUsage', digitalSignature: true, keyCertSign: true },
        { name: 'extKeyUsage', serverAuth: true },
        { name: 'subjectAltName', altNames: altNames.length > 0 ? altNames : [{ type: 2, value: 'fake.test' }] },
      ],
    });
    const config: FakeInternetServerConfig = { web, echo, dns, zone: options.zone ?? DEFAULT_FAKE_ZONE, tls: { certPem: pems.cert, keyPem: pems.private } };

    const tmpDir = await mkdtemp(join(tmpdir(), `${prefix}-inet-`));
    let namespace: VethNamespace | undefined;
    try {
      namespace = await VethNamespace.create({ name: `${prefix}-inet`, link: linkAt(linkRange, 0), addresses });
      const configPath = join(tmpDir, 'config.json');
      await writeFile(configPath, JSON.stringify(config), { mode: 0o600 });
      const server = spawn('nsenter', [`--net=${namespace.netnsPath}`, process.execPath, SERVER_SCRIPT, configPath], { stdio: ['pipe', 'pipe', 'pipe'] });
      const rig = new FakeInternet({ prefix, namespace, config, server, tmpDir, linkRange });
      await rig.attach(options.readyTimeoutMs ?? 10_000);
      return rig;
    } catch (err) {
      await namespace?.destroy();
      await rm(tmpDir, { recursive: true, force: true });
      throw err;
    }
  }

  /** Read the server's stdout; resolves once it reports ready. */
  private attach(readyTimeoutMs: number): Promise<void> {
    let stderr = '';
    this.server.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => fail(`servers not ready after ${readyTimeoutMs} ms`), readyTimeoutMs);
      const fail = (why: string): void => {
        clearTimeout(timer);
        this.server.kill('SIGKILL');
        reject(new RamifyError('RUNTIME_ERROR', `fake internet: ${why} ${stderr.trim()}`.trim()));
      };
      createInterface({ input: this.server.stdout! }).on('line', (line) => {
        const msg = JSON.parse(line) as { ready?: true; fatal?: string; flushed?: number; event?: FakeInternetEvent };
        if (msg.event) {
          this.received.push(msg.event);
          for (const listener of this.listeners) listener(msg.event);
        } else if (msg.flushed !== undefined) {
          this.flushes.get(msg.flushed)?.();
        } else if (msg.ready) {
          clearTimeout(timer);
          resolve();
        } else if (msg.fatal) {
          fail(msg.fatal);
        }
      });
      this.server.on('exit', (code, signal) => {
        this.exited = `server exited (${signal ?? code}) ${stderr.trim()}`;
        for (const done of this.flushes.values()) done();
        fail(this.exited);
      });
    });
  }

  /** Every event so far (a copy), optionally of one kind. */
  events(): FakeInternetEvent[];
  events<K extends FakeInternetEventKind>(kind: K): Array<EventOf<K>>;
  events(kind?: FakeInternetEventKind): FakeInternetEvent[] {
    return this.received.filter((e) => kind === undefined || e.kind === kind);
  }

  /** Forget the events so far. */
  clearEvents(): void {
    this.received = [];
  }

  /**
   * Resolves once every event the servers logged before this call is in {@link events}. (A packet
   * still in flight in the kernel may be logged later.)
   */
  flush(): Promise<void> {
    if (this.exited) return Promise.resolve();
    const id = this.nextFlush++;
    return new Promise((resolve) => {
      this.flushes.set(id, () => {
        this.flushes.delete(id);
        resolve();
      });
      this.server.stdin!.write(JSON.stringify({ flush: id }) + '\n');
    });
  }

  /** The first event (already logged or coming) matching `predicate`; rejects `COMMAND_TIMEOUT` after `timeoutMs` (default 5000). */
  waitForEvent(predicate: (e: FakeInternetEvent) => boolean, timeoutMs = 5000): Promise<FakeInternetEvent> {
    const found = this.received.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const listener = (e: FakeInternetEvent): void => {
        if (!predicate(e)) return;
        clearTimeout(timer);
        this.listeners.delete(listener);
        resolve(e);
      };
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(new RamifyError('COMMAND_TIMEOUT', `no matching fake internet event within ${timeoutMs} ms`));
      }, timeoutMs);
      this.listeners.add(listener);
    });
  }

  /**
   * A client namespace `<prefix>-c<name>` (name: 1-7 of [a-z0-9]) with its own link to the host; its
   * address is the source the host and the rig see. Rejects `CONFLICT` for a duplicate name, `RangeError`
   * past 63 clients.
   */
  async addClient(name: string): Promise<VethNamespace> {
    if (!/^[a-z0-9]{1,7}$/.test(name)) throw new RangeError(`client name '${name}' must be 1-7 of [a-z0-9]`);
    if (this.clients.has(name)) throw new RamifyError('CONFLICT', `client ${name} exists`);
    const index = this.clients.size + 1;
    if (index > MAX_CLIENTS) throw new RangeError(`at most ${MAX_CLIENTS} clients`);
    const client = await VethNamespace.create({ name: `${this.prefix}-c${name}`, link: linkAt(this.linkRange, index) });
    this.clients.set(name, client);
    return client;
  }

  /** Stop the servers and remove every namespace, interface, route and file the rig made. Idempotent. */
  async teardown(): Promise<void> {
    if (!this.exited) {
      const exited = new Promise<void>((resolve) => this.server.once('exit', () => resolve()));
      this.server.stdin!.end();
      const timer = setTimeout(() => this.server.kill('SIGKILL'), 2000);
      await exited;
      clearTimeout(timer);
    }
    for (const client of this.clients.values()) await client.destroy();
    this.clients.clear();
    await this.namespace.destroy();
    await rm(this.tmpDir, { recursive: true, force: true });
  }

  /** Remove every namespace and host interface a rig with `prefix` made (leftovers of a crashed run). */
  static async cleanup(prefix: string): Promise<void> {
    if (!/^[a-z]{2,5}$/.test(prefix)) throw new RangeError(`rig prefix '${prefix}' must be 2-5 lowercase letters`);
    const pattern = new RegExp(`^${prefix}-(inet|c[a-z0-9]{1,7})$`);
    const links = await run(['ip', '-o', 'link', 'show']);
    const linkNames = [...links.stdout.matchAll(/^\d+: ([^:@\s]+)/gm)].map((m) => m[1]!).filter((n) => pattern.test(n));
    for (const name of new Set([...(await listNamespaces(pattern)), ...linkNames])) await destroyVethNamespace(name);
  }
}

/** `10.196.<hash>.0`: one /24 per prefix, outside the daemon's slot ranges (10.200-251 and 10.253). */
function defaultLinkRange(prefix: string): string {
  let hash = 0;
  for (const ch of prefix) hash = (hash * 31 + ch.charCodeAt(0)) >>> 0;
  return `10.196.${hash % 256}.0`;
}

function linkAt(range: number[], index: number): string {
  return `${range[0]}.${range[1]}.${range[2]}.${index * 4}`;
}
