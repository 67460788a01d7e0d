/**
 * The API role's ingress edge (docs/design/SCALE-OUT.md, "Port URLs"): the listener for port URLs
 * (`<port>-<sandboxId>.<domain>`) of every sandbox in the cluster. Per request: parse the Host exactly as a
 * host's ingress does (`@ramify/network`'s `parseIngressHost`) → the sandbox in the shared store (unknown:
 * 404, killed: 410, port not exposed: 404, core's own checks) → its host through placement (core's
 * `placeOnSandbox`, as the API's forwarding does; a paused sandbox on a lost host whose image is durable is
 * placed on another host, the reservation travelling in `x-ramify-placement`) → proxied with http-proxy-3 to
 * that host's ingress listener (`HostRecord.ingressAddress`): HTTP with bodies streamed both ways, and
 * WebSocket upgrades, keeping the original Host. The host's ingress does the rest as on one machine: the
 * token of a private port, waking a paused sandbox, the ingress log, idle auto-pause. The edge holds no
 * firewall table and no dialer: it never reaches a sandbox itself.
 *
 * Answers it gives itself have the host's ingress shape (JSON `ErrorBody`, or a small HTML page for a
 * browser): `INGRESS_HOST_INVALID` 400, `SANDBOX_NOT_FOUND` 404, `SANDBOX_KILLED` 410, `PORT_NOT_EXPOSED`
 * 404, `HOST_LOST` 409 (the sandbox was on a host that stopped heartbeating), `SANDBOX_UNAVAILABLE` 503 (its
 * image is only on a lost host), `NO_HOST_CAPACITY` 503, `RUNTIME_UNAVAILABLE` 503 (its host runs no ingress
 * listener, or did not answer), each naming the host.
 */
import { readFile } from 'node:fs/promises';
import { Agent, createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { DEFAULT_INGRESS_DOMAIN, isRamifyError, RamifyError } from '@ramify/contracts';
import { effectiveAutoResume, exposedAccess, placeOnSandbox, PLACEMENT_HEADER, sandboxNotFound, type Core, type SandboxRecord } from '@ramify/core';
import { isIngressHost, parseIngressHost, sendError, sendUpgradeError } from '@ramify/network';
import { createProxyServer } from 'http-proxy-3';
import { DEFAULT_HOST, DEFAULT_INGRESS_PORT } from '../config.js';
import { publicEndpoint, type IngressOptions, type RunningIngress } from '../ingress.js';

/** Where one request goes: the host's ingress listener, and the reservation moving a paused sandbox there. */
interface EdgeTarget {
  hostId: string;
  /** `host:port` of the host's ingress listener. */
  address: string;
  reservationId: string | null;
  /** Call once the request is done (the last request of a shared wake releases its reservation). Idempotent. */
  done(): void;
}

type Placed = Omit<EdgeTarget, 'done'>;

/**
 * Start the edge for the API role's `core` on `options.host:options.port` (default 127.0.0.1:7424) and set
 * `core.options.ingress` to the endpoint port URLs name (domain, protocol, `publicPort`), so the API's own
 * answers (`getHost(port)`, `ramify sandbox url`) name the edge. Rejects when the port is taken or the TLS
 * files cannot be read.
 */
export async function startIngressEdge(core: Core, options: IngressOptions): Promise<RunningIngress> {
  const domain = options.domain ?? DEFAULT_INGRESS_DOMAIN;
  const tls = options.tls ? { cert: await readFile(options.tls.certFile), key: await readFile(options.tls.keyFile) } : undefined;
  const server: Server = tls ? createHttpsServer(tls) : createHttpServer();
  // Kept-alive connections to the hosts' ingress listeners; a free one is closed before a host's server
  // would close it (Node's 5 s keep-alive).
  const agent = new Agent({ keepAlive: true, timeout: 4000 });
  const proxy = createProxyServer({ xfwd: false, changeOrigin: false, agent });
  const failed = (target: EdgeTarget, client: ServerResponse | Socket, accept: string | undefined) => (err: Error): void => {
    core.logger.warn('ingress edge: a host\'s ingress did not answer', { hostId: target.hostId, address: target.address, error: err.message });
    const error = new RamifyError('RUNTIME_UNAVAILABLE', `host '${target.hostId}' did not answer at ${target.address}: ${err.message}`, { hostId: target.hostId });
    if ('writeHead' in client) sendError(client, error, accept);
    // An upgrade already under way cannot take an HTTP answer any more.
    else if (client.bytesWritten > 0) client.destroy();
    else sendUpgradeError(client, error);
  };
  const wakes = new SharedWakes(core);
  const prepare = async (req: IncomingMessage, client: ServerResponse | Socket): Promise<EdgeTarget | null> => {
    // Only placement sets this header: a client's own is dropped.
    delete req.headers[PLACEMENT_HEADER];
    const target = await edgeTarget(core, req.headers.host, domain, wakes);
    // The client left while placement ran: nothing to send on.
    if (client.destroyed) {
      target.done();
      return null;
    }
    if (target.reservationId !== null) req.headers[PLACEMENT_HEADER] = target.reservationId;
    client.once('close', target.done);
    return target;
  };

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    prepare(req, res).then(
      (target) => target && proxy.web(req, res, { target: `http://${target.address}` }, failed(target, res, req.headers.accept)),
      (err: unknown) => sendError(res, asError(core, err), req.headers.accept),
    );
  });
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    prepare(req, socket).then(
      (target) => target && proxy.ws(req, socket, head, { target: `http://${target.address}` }, failed(target, socket, undefined)),
      (err: unknown) => sendUpgradeError(socket, asError(core, err)),
    );
  });
  server.on('clientError', (_err, socket: Socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: options.host ?? DEFAULT_HOST, port: options.port ?? DEFAULT_INGRESS_PORT }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address();
  if (!bound || typeof bound === 'string') throw new Error('ingress edge listener has no address');
  const protocol = tls ? 'https' : 'http';
  const endpoint = publicEndpoint(domain, options.publicProtocol ?? protocol, options.publicPort ?? bound.port);
  core.options.ingress = endpoint;
  const address = `${bound.address.includes(':') ? `[${bound.address}]` : bound.address}:${bound.port}`;
  core.logger.info('ingress edge serving', { address, domain, protocol });
  return {
    endpoint,
    address,
    close: async () => {
      server.closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      proxy.close();
      agent.destroy();
    },
  };
}

/**
 * Where a request for `hostHeader` goes; a paused sandbox that its host's ingress would wake goes through
 * `wakes` (one placement shared by concurrent requests).
 * @throws RamifyError INGRESS_HOST_INVALID, SANDBOX_NOT_FOUND, SANDBOX_KILLED, PORT_NOT_EXPOSED, HOST_LOST,
 *   SANDBOX_UNAVAILABLE, NO_HOST_CAPACITY, RUNTIME_UNAVAILABLE (its host runs no ingress listener).
 */
export async function edgeTarget(core: Core, hostHeader: string | undefined, domain: string, wakes: SharedWakes): Promise<EdgeTarget> {
  const parsed = parseIngressHost(hostHeader, domain);
  if (!isIngressHost(parsed)) throw new RamifyError('INGRESS_HOST_INVALID', parsed.problem, { host: hostHeader ?? null });
  const record = await core.store.getSandbox(parsed.sandboxId);
  if (!record) throw sandboxNotFound(parsed.sandboxId);
  exposedAccess(record.id, record.state, record.ingress.ports, parsed.port);
  // A paused sandbox the host would wake may have to move first (its host lost): placement decides.
  if (record.state === 'paused' && effectiveAutoResume(record.ingress)) return wakes.acquire(record);
  return { ...(await placeOnIngress(core, record, 'call')), done: () => undefined };
}

/**
 * Placements of paused sandboxes being woken, per sandbox: requests arriving while one is decided or in use
 * share it (one host, one reservation), as a host's concurrent requests share one resume: a page's many
 * requests must not reserve several hosts for one sandbox. Its reservation is released with its last request.
 */
export class SharedWakes {
  private readonly entries = new Map<string, { placed: Promise<Placed>; users: number }>();

  constructor(private readonly core: Core) {}

  /** The shared target for waking `record`. @throws as {@link edgeTarget}. */
  async acquire(record: SandboxRecord): Promise<EdgeTarget> {
    let entry = this.entries.get(record.id);
    if (!entry) this.entries.set(record.id, (entry = { placed: placeOnIngress(this.core, record, 'resume'), users: 0 }));
    const shared = entry;
    shared.users += 1;
    let released = false;
    const done = (): void => {
      if (released) return;
      released = true;
      if ((shared.users -= 1) > 0) return;
      if (this.entries.get(record.id) === shared) this.entries.delete(record.id);
      shared.placed.then((p) => (p.reservationId ? this.core.store.releaseReservation(p.reservationId) : undefined)).catch(() => undefined);
    };
    try {
      return { ...(await shared.placed), done };
    } catch (err) {
      done();
      throw err;
    }
  }
}

/** Placement's host for `record` (core's `placeOnSandbox`) and its ingress listener. @throws as {@link edgeTarget}. */
async function placeOnIngress(core: Core, record: SandboxRecord, purpose: 'resume' | 'call'): Promise<Placed> {
  const placed = await placeOnSandbox(core, record, purpose);
  const host = await core.store.getHost(placed.hostId);
  if (!host?.ingressAddress) {
    if (placed.reservation) await core.store.releaseReservation(placed.reservation.id).catch(() => undefined);
    throw new RamifyError('RUNTIME_UNAVAILABLE', `host '${placed.hostId}', which holds sandbox '${record.id}', runs no ingress listener: start it with --ingress-listen ADDR:PORT`, { hostId: placed.hostId, sandboxId: record.id });
  }
  return { hostId: placed.hostId, address: host.ingressAddress, reservationId: placed.reservation?.id ?? null };
}

function asError(core: Core, err: unknown): RamifyError {
  if (isRamifyError(err)) return err;
  core.logger.warn('ingress edge: a request failed', { error: err instanceof Error ? err.message : String(err) });
  return new RamifyError('INTERNAL', 'internal error');
}
