/**
 * `IngressServer`: the daemon's listener for port URLs (`<port>-<sandboxId>.<domain>`), thin over a
 * {@link IngressBackend} (the daemon's adapter to core). Per request: parse the Host → ask the backend
 * for the sandbox and port (404/410/404) → check the token (401/400/403; a query parameter is exchanged
 * for a cookie by a redirect) → wake the sandbox if paused (held until it runs; 503 + Retry-After past the
 * bound) → proxy ({@link forwardRequest}: node:http both ways) over a kept-alive connection to the slot
 * address from the {@link UpstreamPool} (new ones come from the {@link IngressDialer}: the only sockets the
 * ingress firewall lets reach a slot): bodies streamed both ways with backpressure, never buffered (SSE
 * too), WebSocket upgrades piped as raw sockets by `http-proxy-3` (on a connection of their own),
 * `X-Forwarded-For`/`-Proto`/`-Host` set. A
 * refused connection is explained by asking the sandbox what listens on the port (502 "nothing listens"
 * or "bind 0.0.0.0"). A request whose client is gone before it is proxied is not sent on.
 *
 * The pool is drained before a checkpoint ({@link IngressServer.dropConnections}) and retired when the
 * sandbox leaves `running` ({@link IngressServer.sandboxState}): an idle pooled connection would hold a
 * pause up (gVisor cannot checkpoint an established connection). Client connections keep alive.
 *
 * Every request whose Host names a sandbox is use of it (`backend.hold`, for idle auto-pause) until its
 * response is done (a WebSocket: until it closes), and is logged (`backend.log`) once done: client,
 * method, path without the token, status, body bytes sent, duration, whether it woke the sandbox.
 *
 * Lifecycle: `new` → `listen()` → `close()`.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { createProxyServer } from 'http-proxy-3';
import { isRamifyError, RamifyError, type PortAccess, type SandboxState } from '@ramify/contracts';
import { isWellFormedToken, matchesVerifier, PLACEMENT_HEADER, type IngressLogRecord, type ListenerDiagnosis } from '@ramify/core';
import { accessCookie, presentedToken, upstreamHeaders, withoutTokenParameter, type PresentedToken } from './access.js';
import { sendError, sendUpgradeError } from './answers.js';
import { DialError, type IngressDialer } from './dialer.js';
import { forwardRequest } from './forward.js';
import { isIngressHost, parseIngressHost, type BadIngressHost, type IngressHost } from './host.js';
import { UpstreamPool, type UpstreamPoolOptions, type UpstreamTarget } from './upstream-pool.js';

/** What the ingress asks of the daemon (implemented over core's use-cases). Errors are RamifyErrors. */
export interface IngressBackend {
  /**
   * The port's access, the verifier of the sandbox's token (token access: core's `tokenVerifier`, the
   * token's SHA-256), and its slot address when it runs now (null otherwise: {@link running} wakes it).
   * One lookup per request on the hot path (in the ingress's thread: its route cache, see ./thread/).
   * @throws SANDBOX_NOT_FOUND, SANDBOX_KILLED, PORT_NOT_EXPOSED.
   */
  target(sandboxId: string, port: number): Promise<IngressTargetInfo>;
  /**
   * Resolve once the sandbox runs (waking it when paused): its slot address, and whether it was woken.
   * `placement` is the request's `x-ramify-placement` header (an API process's ingress edge moving a paused
   * sandbox off a lost host: docs/design/SCALE-OUT.md); the daemon checks it against the store.
   * @throws SANDBOX_PAUSED, SANDBOX_WAKING, PLACEMENT_INVALID, ...
   */
  running(sandboxId: string, placement?: string): Promise<{ slotAddress: string; woke: boolean }>;
  /** What listens on `port` inside the running sandbox. */
  listeners(sandboxId: string, port: number): Promise<ListenerDiagnosis>;
  /** The request counts as use of the sandbox until the returned function is called (idempotent). Never throws. */
  hold(sandboxId: string): () => void;
  /** Record a finished request in the sandbox's ingress log. Never throws, never waits. */
  log(entry: IngressRequestRecord): void;
}

/** What {@link IngressBackend.target} says of a sandbox's port. */
export interface IngressTargetInfo {
  access: PortAccess;
  /** For token access: what the presented token must match (core's `matchesVerifier`); else null. */
  tokenVerifier: string | null;
  /** The slot address when the sandbox runs now; null: ask {@link IngressBackend.running}. */
  slotAddress: string | null;
}

/**
 * One finished request (or WebSocket) for the ingress log: core's stored shape (`at` ms since the epoch,
 * `path` without the token parameter, `status` 101 for an opened WebSocket and 0 when the connection broke
 * before any, `bytes` of response body sent, `durationMs` from arrival to the last byte or the close).
 */
export type IngressRequestRecord = IngressLogRecord;

/** What one request's log entry gathers while it runs. */
interface RequestTrace {
  startedAt: number;
  startedMs: number;
  bytes: number;
  woke: boolean;
  /** The client's side closed (response done, or the client left). */
  closed: boolean;
  /** An upgrade's status: 101 once handed to the proxy, else the error's. */
  status?: number;
}

export interface IngressServerOptions {
  backend: IngressBackend;
  dialer: IngressDialer;
  /** The ingress domain (`localhost`: `*.localhost` resolves to loopback). */
  domain: string;
  /** TLS certificate and key (PEM): serve HTTPS; absent: HTTP. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** After a wake, connections refused are retried this long while the server comes back, ms; default 10000. */
  wakeConnectRetryMs?: number;
  /** Bounds of the upstream pool (idle connections per target, idle timeout); defaults in {@link UpstreamPoolOptions}. */
  pool?: Omit<UpstreamPoolOptions, 'dial'>;
  /** Called for failures worth a log line (never with a token). */
  onError?: (err: unknown, context: { sandboxId?: string; port?: number }) => void;
}

/** Connections open into one sandbox, for {@link IngressServer.connectionsInto}. */
export interface UpstreamConnections {
  /** Every connection the ingress holds into the sandbox (serving a request, a WebSocket, or idle). */
  open: number;
  /** Of those, idle in the pool. */
  idle: number;
}

const HOST_MEMO_SIZE = 1024;

export class IngressServer {
  private readonly options: IngressServerOptions;
  private readonly server: Server;
  private readonly proxy = createProxyServer({ xfwd: false, changeOrigin: false, ws: true });
  /** Open connections into each sandbox (per sandbox id), for {@link dropConnections}. */
  private readonly upstreams = new Map<string, Set<Socket>>();
  private readonly pool: UpstreamPool;
  /** Until when refused connections are retried, per sandbox woken (ms since the epoch). */
  private readonly retryRefusedUntil = new Map<string, number>();
  /** Host headers parsed lately (at most {@link HOST_MEMO_SIZE}). */
  private readonly hosts = new Map<string, IngressHost | BadIngressHost>();
  readonly protocol: 'http' | 'https';

  constructor(options: IngressServerOptions) {
    this.options = options;
    this.protocol = options.tls ? 'https' : 'http';
    this.pool = new UpstreamPool({ ...options.pool, dial: (target) => this.dial(target) });
    this.server = options.tls ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }) : createHttpServer();
    this.server.on('request', (req: IncomingMessage, res: ServerResponse) => void this.onRequest(req, res));
    this.server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => void this.onUpgrade(req, socket, head));
    this.server.on('clientError', (_err, socket: Socket) => socket.destroy());
    this.proxy.on('error', (err, _req, resOrSocket) => {
      this.options.onError?.(err, {});
      if (resOrSocket && 'writeHead' in resOrSocket) sendError(resOrSocket as ServerResponse, new RamifyError('UPSTREAM_ERROR', `the connection to the sandbox's server failed: ${err.message}`), undefined);
      else (resOrSocket as Socket | undefined)?.destroy();
    });
  }

  /** Listen on `host:port` (0 picks a free port). Rejects with the socket error (`EADDRINUSE`). */
  async listen(host: string, port: number): Promise<{ address: string; port: number }> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen({ host, port }, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const bound = this.server.address();
    if (!bound || typeof bound === 'string') throw new Error('ingress listener has no address');
    return { address: bound.address, port: bound.port };
  }

  /** Stop accepting; open connections are closed. */
  async close(): Promise<void> {
    this.server.closeAllConnections?.();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.proxy.close();
    this.pool.close();
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const accept = req.headers.accept;
    const trace: RequestTrace = { startedAt: Date.now(), startedMs: performance.now(), bytes: 0, woke: false, closed: false };
    try {
      const host = this.parseHost(req);
      this.track(req, host, trace, res);
      const { access, tokenVerifier, slotAddress } = await this.options.backend.target(host.sandboxId, host.port);
      if (access === 'token') {
        const granted = this.checkToken(req, tokenVerifier as string);
        if (granted.source === 'query' && (req.method === 'GET' || req.method === 'HEAD')) {
          // Once: the token goes into a host-only HttpOnly cookie and out of the URL.
          res.writeHead(302, { location: withoutTokenParameter(req.url ?? '/'), 'set-cookie': accessCookie(granted.value, { secure: this.protocol === 'https' }), 'cache-control': 'no-store', 'content-length': 0 });
          res.end();
          return;
        }
      }
      const target = slotAddress !== null ? { sandboxId: host.sandboxId, port: host.port, slotAddress } : await this.route(host, trace, req);
      // The client left while it waited (a wake, a slow lookup): nothing to send on. Proxied anyway, the
      // request's connection would stay open into the sandbox, holding every later pause up.
      if (trace.closed) return;
      this.forward(req, 'request');
      forwardRequest(req, res, { host: target.slotAddress, port: host.port, agent: this.pool.agentFor(target), path: req.url ?? '/', headers: req.headers }, {
        onResponse: (answer) => answer.on('data', (chunk: Buffer) => (trace.bytes += chunk.length)),
        onError: (err) => {
          void this.upstreamFailed(err, host).then((error) => {
            if (!res.headersSent && !trace.closed) trace.bytes += sendError(res, error, accept);
            else res.destroy();
          });
        },
      });
    } catch (err) {
      trace.bytes += sendError(res, this.asError(err), accept);
    }
  }

  /** What a failed upstream request answers: a refused dial explained, anything else `UPSTREAM_ERROR`. */
  private async upstreamFailed(err: Error, host: IngressHost): Promise<RamifyError> {
    if (err instanceof DialError) return this.explain(host, err);
    this.options.onError?.(err, { sandboxId: host.sandboxId, port: host.port });
    return new RamifyError('UPSTREAM_ERROR', `the connection to the sandbox's server failed: ${err.message}`);
  }

  /** Hold the sandbox while the request (or WebSocket, `done` its socket) lasts; log it when it ends. */
  private track(req: IncomingMessage, host: IngressHost, trace: RequestTrace, done: ServerResponse | Socket): void {
    const { backend } = this.options;
    const release = backend.hold(host.sandboxId);
    const path = withoutTokenParameter(req.url ?? '/');
    const method = req.method ?? 'GET';
    const client = req.socket.remoteAddress ?? '';
    done.once('close', () => {
      trace.closed = true;
      release();
      const upgraded = !('writeHead' in done);
      const status = upgraded ? (trace.status ?? 0) : done.headersSent ? done.statusCode : 0;
      const bytes = upgraded ? done.bytesWritten : trace.bytes;
      backend.log({ sandboxId: host.sandboxId, at: trace.startedAt, client, method, path, port: host.port, status, bytes, durationMs: Math.round((performance.now() - trace.startedMs) * 1000) / 1000, woke: trace.woke });
    });
  }


  private async onUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    const trace: RequestTrace = { startedAt: Date.now(), startedMs: performance.now(), bytes: 0, woke: false, closed: false };
    try {
      const host = this.parseHost(req);
      this.track(req, host, trace, socket);
      const { access, tokenVerifier } = await this.options.backend.target(host.sandboxId, host.port);
      if (access === 'token') this.checkToken(req, tokenVerifier as string);
      const target = await this.route(host, trace, req);
      // A connection of its own, dialed first so that a refusal is answered (explained) before the
      // upgrade is under way: an upgraded socket never returns to a pool.
      const upstream = await this.dial(target).catch(async (err: unknown) => {
        throw err instanceof DialError ? await this.explain(host, err) : err;
      });
      if (trace.closed) {
        upstream.destroy();
        return;
      }
      this.forward(req, 'upgrade');
      trace.status = 101;
      this.proxy.ws(req, socket, head, { target: { host: target.slotAddress, port: host.port }, agent: this.pool.agentWith(target, upstream) });
    } catch (err) {
      const error = this.asError(err);
      trace.status = error.status;
      sendUpgradeError(socket, error);
    }
  }

  /** @throws RamifyError `INGRESS_HOST_INVALID`. */
  private parseHost(req: IncomingMessage): IngressHost {
    const header = req.headers.host ?? '';
    let parsed = this.hosts.get(header);
    if (!parsed) {
      parsed = parseIngressHost(req.headers.host, this.options.domain);
      // Clients send the same few Host headers again and again; a bounded memo of the parse.
      if (this.hosts.size >= HOST_MEMO_SIZE) this.hosts.clear();
      this.hosts.set(header, parsed);
    }
    if (!isIngressHost(parsed)) throw new RamifyError('INGRESS_HOST_INVALID', parsed.problem, { host: req.headers.host ?? null });
    return parsed;
  }

  /**
   * The request's token, when it is the sandbox's (matches `verifier`); given as a query parameter
   * (`source` `query`), a GET is answered with the cookie exchange.
   * @throws RamifyError `ACCESS_TOKEN_REQUIRED` (none; a malformed cookie counts as none), `ACCESS_TOKEN_MALFORMED`, `ACCESS_TOKEN_INVALID`.
   */
  private checkToken(req: IncomingMessage, verifier: string): PresentedToken {
    const presented = presentedToken({ url: req.url ?? '/', headers: req.headers });
    // Made only when thrown: an Error captures a stack, a cost every proxied request would pay.
    const required = (): RamifyError => new RamifyError('ACCESS_TOKEN_REQUIRED', 'this port needs the sandbox\'s access token: send header X-Ramify-Access-Token, or open the URL once with ?ramify_access_token=TOKEN (`ramify sandbox url ID PORT --json` gives it)');
    if (!presented) throw required();
    if (!isWellFormedToken(presented.value)) {
      if (presented.source === 'cookie') throw required();
      throw new RamifyError('ACCESS_TOKEN_MALFORMED', `the access token in the ${presented.source === 'header' ? 'X-Ramify-Access-Token header' : 'ramify_access_token parameter'} is malformed (expected rit_ and 43 characters)`);
    }
    if (!matchesVerifier(presented.value, verifier)) throw new RamifyError('ACCESS_TOKEN_INVALID', "the access token is not this sandbox's");
    return presented;
  }

  /**
   * Close every connection the ingress holds into `sandboxId`, idle pooled ones and ones serving a request
   * or a WebSocket (their clients see them end): a checkpoint that needs a quiet network would otherwise
   * wait for them. Until the sandbox runs again ({@link sandboxState} `running`) its requests get
   * connections that close after one response, so none is left idle while the checkpoint waits. A
   * client's next request wakes the sandbox.
   * @returns how many were closed, and how many of those were idle in the pool.
   */
  dropConnections(sandboxId: string): UpstreamConnections {
    const idle = this.pool.drain(sandboxId);
    const open = this.upstreams.get(sandboxId);
    const count = open?.size ?? 0;
    for (const socket of open ?? []) socket.destroy();
    this.upstreams.delete(sandboxId);
    return { open: Math.max(count, idle), idle };
  }

  /**
   * A sandbox's new state (core's state events). Leaving `running` (pausing, paused, killed, ...) retires
   * its pool: idle connections closed, none reused after a pause; `running` lets it pool again.
   */
  sandboxState(sandboxId: string, state: SandboxState): void {
    if (state === 'running') {
      this.pool.allow(sandboxId);
      return;
    }
    this.pool.retire(sandboxId);
    if (state === 'killed') {
      this.pool.allow(sandboxId);
      this.retryRefusedUntil.delete(sandboxId);
    }
  }

  /** Connections the ingress holds into `sandboxId` now. */
  connectionsInto(sandboxId: string): UpstreamConnections {
    return { open: this.upstreams.get(sandboxId)?.size ?? 0, idle: this.pool.idleCount(sandboxId) };
  }

  private remember(sandboxId: string, socket: Socket): void {
    let open = this.upstreams.get(sandboxId);
    if (!open) this.upstreams.set(sandboxId, (open = new Set()));
    open.add(socket);
    socket.once('close', () => {
      open.delete(socket);
      if (open.size === 0 && this.upstreams.get(sandboxId) === open) this.upstreams.delete(sandboxId);
    });
  }

  /** Wake the sandbox if needed: where its port is now. */
  private async route(host: IngressHost, trace: RequestTrace, req: IncomingMessage): Promise<UpstreamTarget> {
    const placement = req.headers[PLACEMENT_HEADER];
    const { slotAddress, woke } = await this.options.backend.running(host.sandboxId, typeof placement === 'string' ? placement : undefined);
    trace.woke = woke;
    if (woke) this.retryRefusedUntil.set(host.sandboxId, Date.now() + (this.options.wakeConnectRetryMs ?? 10_000));
    return { sandboxId: host.sandboxId, port: host.port, slotAddress };
  }

  /**
   * A new connection to the target through the dialer (the pool's source). Shortly after a wake, refused
   * connections are retried while the restored server comes back.
   * @throws DialError with the last dial's code.
   */
  private async dial(target: UpstreamTarget): Promise<Socket> {
    for (let delayMs = 50; ; delayMs = Math.min(delayMs * 2, 500)) {
      try {
        const socket = await this.options.dialer.dial(target.slotAddress, target.port);
        socket.on('error', () => socket.destroy());
        this.remember(target.sandboxId, socket);
        return socket;
      } catch (err) {
        const retryUntil = this.retryRefusedUntil.get(target.sandboxId) ?? 0;
        // A woken sandbox's server may need a moment to accept again: held, within the bound.
        if (err instanceof DialError && err.code === 'ECONNREFUSED' && Date.now() < retryUntil) {
          await new Promise((resolve) => setTimeout(resolve, delayMs));
          continue;
        }
        throw err;
      }
    }
  }

  private async explain(host: IngressHost, err: DialError): Promise<RamifyError> {
    const { port, sandboxId } = host;
    if (err.code !== 'ECONNREFUSED') return new RamifyError('UPSTREAM_ERROR', `could not connect to port ${port} of sandbox '${sandboxId}': ${err.code}`, { id: sandboxId, port });
    const found = await this.options.backend.listeners(sandboxId, port).catch(() => null);
    if (found === 'loopback-only') {
      return new RamifyError('UPSTREAM_LOOPBACK_ONLY', `a server in sandbox '${sandboxId}' listens on port ${port} only on 127.0.0.1 (loopback), which the ingress cannot reach: bind 0.0.0.0 (e.g. \`python3 -m http.server --bind 0.0.0.0 ${port}\`)`, { id: sandboxId, port });
    }
    if (found === 'none') return new RamifyError('UPSTREAM_NOT_LISTENING', `nothing in sandbox '${sandboxId}' listens on port ${port}; start a server on 0.0.0.0:${port}`, { id: sandboxId, port });
    return new RamifyError('UPSTREAM_ERROR', `port ${port} of sandbox '${sandboxId}' refused the connection`, { id: sandboxId, port });
  }

  /** Rewrite the request for the sandbox's server: forwarded headers, no token; a request's hop-by-hop headers dropped. */
  private forward(req: IncomingMessage, kind: 'request' | 'upgrade'): void {
    const host = req.headers.host ?? '';
    req.headers = upstreamHeaders(req.headers, { address: req.socket.remoteAddress ?? '', protocol: this.protocol, host }, kind === 'request' ? 'drop' : 'keep') as IncomingMessage['headers'];
    req.url = withoutTokenParameter(req.url ?? '/');
  }

  private asError(err: unknown): RamifyError {
    if (isRamifyError(err)) return err;
    this.options.onError?.(err, {});
    return new RamifyError('INTERNAL', 'internal error');
  }
}
