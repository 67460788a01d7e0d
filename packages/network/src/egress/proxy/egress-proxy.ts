/**
 * `EgressProxy`: the daemon's transparent proxy for sandbox traffic to ports 80 and 443 (NETWORK.md).
 * nftables redirects each original port to its own listener; for each connection the proxy identifies
 * the sandbox by source address, reads the TLS ClientHello (SNI, without terminating TLS) or the HTTP
 * request head (Host) within byte and time limits, asks the policy about that name and port, and if
 * allowed resolves the NAME ITSELF (never the client's destination address: defeats `/etc/hosts`
 * spoofing and shared-CDN addresses), connects there, replays the bytes already read and pipes both
 * ways (backpressure via `pipe`, half-close forwarded). Anything else is closed (HTTP gets a short
 * 403/400/431). Every connection yields one {@link EgressProxyDecision}.
 *
 * Lifecycle: `new` → `listen()` once per redirected port → `revalidate()` after policy changes →
 * `close()`.
 *
 * Limits of the approach: after the first request head (HTTP keep-alive) or inside TLS (domain
 * fronting), a client may name another host served by the same upstream; the proxy only guarantees
 * the connection goes to an address of the allowed name.
 */
import { connect, createServer, isIPv4, type Server, type Socket } from 'node:net';
import { DEFAULT_BLOCKED_RANGES, ipv4RangeSet, type Ipv4RangeSet } from '../policy/address-ranges.js';
import { inspectHttp, inspectTls, type InspectResult } from './egress-proxy-inspect.js';
import type {
  EgressOriginalDestination, EgressProxyConnection, EgressProxyDecision, EgressProxyListenerSpec, EgressProxyOptions, EgressProxyReason,
  EgressProxySandbox,
} from './egress-proxy-types.js';

export type {
  EgressOriginalDestination, EgressProxyConnection, EgressProxyDecision, EgressProxyListenerSpec, EgressProxyOptions, EgressProxyProtocol,
  EgressProxyReason, EgressProxySandbox, EgressProxyVerdict,
} from './egress-proxy-types.js';

/** The state of one client connection that reached the pipe stage. */
interface Piped extends EgressProxyConnection {
  sourcePort: number;
  client: Socket;
  upstream: Socket;
  protocol: EgressProxyListenerSpec['protocol'];
  intended: EgressOriginalDestination | null;
}

/** Thrown inside the connection path to end it with a decision. */
class Refusal {
  constructor(readonly verdict: 'denied' | 'failed', readonly reason: EgressProxyReason, readonly detail?: string) {}
}

const HTTP_STATUS: Partial<Record<EgressProxyReason, string>> = {
  policy: '403 Forbidden',
  'no-name': '403 Forbidden',
  'unknown-source': '403 Forbidden',
  'unknown-destination': '403 Forbidden',
  'blocked-address': '403 Forbidden',
  malformed: '400 Bad Request',
  'too-large': '431 Request Header Fields Too Large',
  'resolve-failed': '502 Bad Gateway',
  'connect-failed': '502 Bad Gateway',
};

export class EgressProxy {
  private readonly options: EgressProxyOptions;
  private readonly blocked: Ipv4RangeSet;
  private readonly servers = new Set<Server>();
  private readonly clients = new Set<Socket>();
  private readonly piped = new Set<Piped>();
  private closed = false;
  /** Bumped by every {@link revalidate}: a connection whose verdict is older asks again before piping. */
  private generation = 0;

  /** Throws `RangeError` for a malformed blocked range. Does not touch the network (see {@link listen}). */
  constructor(options: EgressProxyOptions) {
    this.options = options;
    this.blocked = ipv4RangeSet(options.blockedRanges ?? DEFAULT_BLOCKED_RANGES);
  }

  /** Bind one listener; resolves with the bound address and port. Rejects with the socket error (e.g. `EADDRINUSE`). */
  async listen(spec: EgressProxyListenerSpec): Promise<{ address: string; port: number }> {
    if (this.closed) throw new Error('egress proxy is closed');
    const server = createServer({ allowHalfOpen: true }, (socket) => this.accept(socket, spec));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: spec.address, port: spec.port }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (err) => this.options.onError?.(err));
    this.servers.add(server);
    const bound = server.address();
    if (bound === null || typeof bound === 'string') throw new Error('listener has no TCP address');
    return { address: bound.address, port: bound.port };
  }

  /** Client connections open now, over every listener (inspecting or piping). */
  get openConnections(): number {
    return this.clients.size;
  }

  /** Connections being piped now (a snapshot). */
  connections(): EgressProxyConnection[] {
    return [...this.piped].map(({ sandboxId, source, name, port, destination, rule }) => ({ sandboxId, source, name, port, destination, rule }));
  }

  /**
   * Ask the policy again about every piped connection (call after a policy change) and cut the ones it
   * now denies, reporting each as `denied`/`revoked`. A callback that throws cuts the connection too
   * (fail closed). Resolves with the number cut.
   */
  async revalidate(): Promise<number> {
    let cut = 0;
    this.generation++;
    await Promise.all([...this.piped].map(async (conn) => {
      let verdict: { allowed: boolean; rule: string | null } | null = null;
      try {
        const sandbox = await this.options.policyForSource(conn.source);
        verdict = sandbox && sandbox.sandboxId === conn.sandboxId ? await sandbox.allow(conn.name, conn.port) : null;
      } catch (err) {
        this.options.onError?.(err);
      }
      if (verdict?.allowed || !this.piped.has(conn)) return;
      cut++;
      this.piped.delete(conn);
      conn.client.destroy();
      conn.upstream.destroy();
      this.report({ sandboxId: conn.sandboxId, source: conn.source, sourcePort: conn.sourcePort, name: conn.name, port: conn.port, protocol: conn.protocol, verdict: 'denied', reason: 'revoked', rule: verdict?.rule ?? null, destination: conn.destination, intended: conn.intended });
    }));
    return cut;
  }

  /** Stop every listener and destroy every connection. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const stopped = [...this.servers].map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
    for (const conn of this.piped) conn.upstream.destroy();
    for (const client of this.clients) client.destroy();
    this.piped.clear();
    this.servers.clear();
    await Promise.all(stopped);
  }

  private accept(client: Socket, spec: EgressProxyListenerSpec): void {
    const source = client.remoteAddress ?? '';
    client.on('error', (err) => this.options.onError?.(err));
    const base = { source, sourcePort: client.remotePort ?? 0, protocol: spec.protocol, port: spec.originalPort, sandboxId: null, name: null, rule: null, destination: null, intended: null };
    if (this.closed || this.clients.size >= (this.options.maxConnections ?? 1024)) {
      client.destroy();
      this.report({ ...base, verdict: 'denied', reason: 'overloaded' });
      return;
    }
    this.clients.add(client);
    client.once('close', () => this.clients.delete(client));
    void this.handle(client, spec, source).catch((err) => {
      client.destroy();
      this.options.onError?.(err);
    });
  }

  private async handle(client: Socket, spec: EgressProxyListenerSpec, source: string): Promise<void> {
    const decision: EgressProxyDecision = {
      sandboxId: null, source, sourcePort: client.remotePort ?? 0, name: null, port: spec.originalPort, protocol: spec.protocol, verdict: 'denied', reason: 'error', rule: null, destination: null, intended: null,
    };
    let head: Buffer = Buffer.alloc(0);
    try {
      if (this.options.originalDestination) {
        const destination = await this.lookup(() => this.options.originalDestination!(client, spec));
        if (destination === null) throw new Refusal('denied', 'unknown-destination');
        decision.intended = destination;
        decision.port = destination.port;
      }
      const sandbox = await this.lookup(() => this.options.policyForSource(source));
      if (sandbox === null) throw new Refusal('denied', 'unknown-source');
      decision.sandboxId = sandbox.sandboxId;
      // Unread bytes wait in the socket (no 'data' listener yet); the head's limits run from here.
      const read = await this.readHead(client, spec);
      head = read.data;
      if (read.result.state === 'invalid') throw new Refusal('denied', 'malformed', read.result.why);
      if (read.result.state !== 'name') throw new Refusal('denied', read.reason);
      const name = read.result.name;
      if (name === null) throw new Refusal('denied', 'no-name');
      decision.name = name;
      const checkedAt = this.generation;
      const verdict = await this.lookup(() => (sandbox as EgressProxySandbox).allow(name, decision.port));
      decision.rule = verdict.rule;
      if (!verdict.allowed) throw new Refusal('denied', 'policy');
      const upstream = await this.dial(name, decision.port);
      decision.destination = upstream.remoteAddress ?? null;
      if (client.destroyed) {
        upstream.destroy();
        return;
      }
      if (this.generation !== checkedAt && !(await this.stillAllowed(source, sandbox.sandboxId, name, decision.port))) {
        upstream.destroy();
        throw new Refusal('denied', 'revoked', 'the policy changed while connecting');
      }
      this.pipe(client, upstream, head, { ...decision, sandboxId: sandbox.sandboxId, name, destination: decision.destination ?? '' });
      this.report({ ...decision, verdict: 'allowed', reason: 'allowed' });
    } catch (err) {
      if (!(err instanceof Refusal)) {
        this.refuse(client, spec, 'error');
        this.report({ ...decision, verdict: 'denied', reason: 'error', detail: String((err as Error)?.message ?? err) });
        return;
      }
      this.refuse(client, spec, err.reason, decision.name);
      this.report({ ...decision, verdict: err.verdict, reason: err.reason, ...(err.detail === undefined ? {} : { detail: err.detail }) });
    }
  }

  /** The policy's current verdict for a connection that was allowed before a {@link revalidate}; false on any error. */
  private async stillAllowed(source: string, sandboxId: string, name: string, port: number): Promise<boolean> {
    try {
      const sandbox = await this.lookup(() => this.options.policyForSource(source));
      return sandbox !== null && sandbox.sandboxId === sandboxId && (await this.lookup(() => sandbox.allow(name, port))).allowed;
    } catch {
      return false;
    }
  }

  /** Run a policy callback within `resolveTimeoutMs`; a throw or timeout becomes `error`. */
  private async lookup<T>(call: () => T | Promise<T>): Promise<T> {
    const limit = this.options.resolveTimeoutMs ?? 5000;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        Promise.resolve().then(call),
        new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Refusal('denied', 'error', `policy callback took over ${limit} ms`)), limit))),
      ]);
    } catch (err) {
      throw err instanceof Refusal ? err : new Refusal('denied', 'error', String((err as Error)?.message ?? err));
    } finally {
      clearTimeout(timer);
    }
  }

  /** Read until the inspector has an answer, the byte limit or the time limit; leaves the socket paused. */
  private readHead(client: Socket, spec: EgressProxyListenerSpec): Promise<{ data: Buffer; result: InspectResult; reason: EgressProxyReason }> {
    const limit = spec.protocol === 'tls' ? this.options.maxClientHelloBytes ?? 16389 : this.options.maxHttpHeadBytes ?? 16384;
    const inspect = spec.protocol === 'tls' ? inspectTls : inspectHttp;
    return new Promise((resolve) => {
      let data = Buffer.alloc(0);
      let busy = false;
      let done = false;
      const finish = (result: InspectResult, reason: EgressProxyReason): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        client.pause();
        client.off('data', onData).off('end', onEnd).off('close', onEnd);
        resolve({ data, result, reason });
      };
      const timer = setTimeout(() => finish({ state: 'more' }, 'timeout'), this.options.headerTimeoutMs ?? 10_000);
      const onEnd = (): void => finish({ state: 'more' }, 'no-name');
      const step = async (): Promise<void> => {
        busy = true;
        client.pause();
        let seen = -1;
        while (!done && seen !== data.length) {
          seen = data.length;
          const result = await inspect(data.subarray(0, limit));
          if (result.state !== 'more') return finish(result, 'allowed');
          if (data.length >= limit) return finish({ state: 'more' }, 'too-large');
        }
        busy = false;
        if (!done) client.resume();
      };
      const onData = (chunk: Buffer): void => {
        data = Buffer.concat([data, chunk]);
        if (!busy) void step();
      };
      client.on('data', onData).once('end', onEnd).once('close', onEnd);
    });
  }

  /** Resolve `name`, skip blocked addresses, connect to the first that answers. */
  private async dial(name: string, port: number): Promise<Socket> {
    let addresses: string[];
    try {
      addresses = await this.lookup(() => this.options.resolve(name));
    } catch (err) {
      throw new Refusal('failed', 'resolve-failed', err instanceof Refusal ? err.detail : String(err));
    }
    if (addresses.length === 0) throw new Refusal('failed', 'resolve-failed', `${name} has no addresses`);
    const usable = addresses.filter((a) => isIPv4(a) && !this.blocked.has(a)); // IPv6 egress is dropped, never dialed
    if (usable.length === 0) throw new Refusal('denied', 'blocked-address', `${name} resolves only to blocked addresses (${addresses.join(', ')})`);
    const errors: string[] = [];
    for (const address of usable) {
      try {
        return await this.connectOne(address, port);
      } catch (err) {
        errors.push(`${address}: ${(err as Error).message}`);
      }
    }
    throw new Refusal('failed', 'connect-failed', errors.join('; '));
  }

  private connectOne(address: string, port: number): Promise<Socket> {
    const limit = this.options.connectTimeoutMs ?? 5000;
    return new Promise((resolve, reject) => {
      const socket = connect({ host: address, port, allowHalfOpen: true });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`no connection within ${limit} ms`));
      }, limit);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.off('error', reject);
        resolve(socket);
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  /** Replay `head` upstream, then pipe both ways; an error or reset on one side destroys the other. */
  private pipe(client: Socket, upstream: Socket, head: Buffer, info: Omit<Piped, 'client' | 'upstream'>): void {
    const conn: Piped = { ...info, client, upstream };
    this.piped.add(conn);
    upstream.on('error', (err) => this.options.onError?.(err));
    const closed = (peer: Socket) => (hadError: boolean): void => {
      if (hadError) peer.destroy();
      if (client.destroyed && upstream.destroyed) this.piped.delete(conn);
    };
    client.once('close', closed(upstream));
    upstream.once('close', closed(client));
    upstream.write(head);
    client.pipe(upstream);
    upstream.pipe(client);
    client.resume();
  }

  /** Close a refused client: HTTP gets a short status response first. */
  private refuse(client: Socket, spec: EgressProxyListenerSpec, reason: EgressProxyReason, name: string | null = null): void {
    const status = HTTP_STATUS[reason];
    if (spec.protocol !== 'http' || status === undefined || client.destroyed || !client.writable) {
      client.destroy();
      return;
    }
    const body = reason === 'policy' && name !== null
      ? `ramify egress policy: ${name}:${spec.originalPort} is not allowed for this sandbox\n`
      : `ramify egress proxy: request refused (${reason})\n`;
    client.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    client.resume(); // discard whatever the client still sends, for at most headerTimeoutMs
    const timer = setTimeout(() => client.destroy(), this.options.headerTimeoutMs ?? 10_000);
    client.once('close', () => clearTimeout(timer));
  }

  private report(decision: EgressProxyDecision): void {
    try {
      this.options.onDecision(decision);
    } catch (err) {
      this.options.onError?.(err);
    }
  }
}
