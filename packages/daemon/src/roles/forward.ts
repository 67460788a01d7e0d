/**
 * The API role's forwarding (docs/design/SCALE-OUT.md): after authentication and team scoping (another
 * team's sandbox is 404 before anything is forwarded), a request whose route the route table marks
 * `sandbox-host` goes to the host recorded on its sandbox, and a `placed` one to the host placement chose
 * (its reservation in the `x-ramify-placement` header, which the host checks against the store). Requests
 * travel through http-proxy-3: HTTP with streaming bodies both ways, and WebSocket upgrades. The caller's
 * own `Authorization` header goes along: the host authenticates it again against the shared store.
 * `any` routes are served here from the store by the same handlers as on one machine, and so is
 * `ssh-access` when this process runs the SSH relay (ssh/relay.ts): its command then names the relay.
 */
import { Readable } from 'node:stream';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { matchRoute, RamifyError, type CreateSandboxRequest, type RouteMatch } from '@ramify/contracts';
import { killOnLostHost, placeCreate, placeOnSandbox, PLACEMENT_HEADER, type Core, type PlacementTarget } from '@ramify/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createProxyServer } from 'http-proxy-3';
import { callerOf } from '../http/request-context.js';

/** How long a forwarded call may take before the host answers at all (ms): a create or resume on a busy host. */
const PROXY_TIMEOUT_MS = 900_000;

/** Where a request goes, decided before its body is read (`sandbox-host`) or after (`placed`). */
function routeOf(request: FastifyRequest): RouteMatch | null {
  return matchRoute(request.method, request.url.split('?')[0] ?? '');
}

/** The raw upgrade socket and head @fastify/websocket kept on the request (symbols `ws-socket`, `ws-head`). */
function upgradeOf(raw: IncomingMessage): { socket: Socket; head: Buffer } | null {
  const symbols = Object.getOwnPropertySymbols(raw);
  const get = (name: string): unknown => {
    const symbol = symbols.find((s) => s.description === name);
    return symbol ? (raw as unknown as Record<symbol, unknown>)[symbol] : undefined;
  };
  const socket = get('ws-socket') as Socket | undefined;
  return socket ? { socket, head: (get('ws-head') as Buffer | undefined) ?? Buffer.alloc(0) } : null;
}

/**
 * Install the forwarding hooks on the API role's `app`: an onRequest hook (after auth and scope) for
 * `sandbox-host` routes and a preHandler (the body parsed: placement needs the create's resources) for
 * `placed` ones. Call after the auth and scope hooks are added.
 */
export function installForwarding(app: FastifyInstance, core: Core): void {
  const proxy = createProxyServer({ xfwd: true, proxyTimeout: PROXY_TIMEOUT_MS });
  const failed = (target: PlacementTarget, res: ServerResponse | Socket) => (err: Error): void => {
    core.logger.warn('forwarding failed', { hostId: target.hostId, url: target.url, error: err.message });
    if (!('writeHead' in res)) return void res.destroy();
    if (res.headersSent) return void res.destroy();
    const body = new RamifyError('RUNTIME_UNAVAILABLE', `host '${target.hostId}' at ${target.url} did not answer: ${err.message}`, { hostId: target.hostId }).toBody();
    res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const forward = (request: FastifyRequest, reply: FastifyReply, target: PlacementTarget, body?: Buffer): void => {
    const raw = request.raw;
    // Only placement sets this header: a client's own is dropped.
    delete raw.headers[PLACEMENT_HEADER];
    const headers: Record<string, string> = target.reservation ? { [PLACEMENT_HEADER]: target.reservation.id } : {};
    reply.hijack();
    const upgrade = upgradeOf(raw);
    if (upgrade) {
      proxy.ws(raw, upgrade.socket, upgrade.head, { target: target.url, headers }, failed(target, upgrade.socket));
      return;
    }
    if (body) {
      delete raw.headers['transfer-encoding'];
      headers['content-length'] = String(body.length);
    }
    proxy.web(raw, reply.raw, { target: target.url, headers, ...(body ? { buffer: Readable.from([body]) } : {}) }, failed(target, reply.raw));
  };

  app.addHook('onRequest', async (request, reply) => {
    const match = routeOf(request);
    if (match?.route.target !== 'sandbox-host' || request.ramify.scopeError) return;
    // With its own SSH relay the API grants SSH access itself (the token is in the shared store), pointing at the relay.
    if (match.operationId === 'createSshAccess' && core.options.ssh) return;
    const record = await core.store.getSandbox(match.params.id ?? '');
    if (!record) return;
    try {
      const target = await placeOnSandbox(core, record, match.operationId === 'resumeSandbox' ? 'resume' : 'call');
      forward(request, reply, target);
    } catch (err) {
      // No live host holds it: the kill is answered here (the store forgets it; a returning host stops it).
      const code = (err as { code?: string }).code;
      if (match.operationId === 'killSandbox' && (code === 'HOST_LOST' || code === 'SANDBOX_UNAVAILABLE')) {
        await killOnLostHost(core, record);
        return reply.code(204).send();
      }
      // A stream answers its refusal as its error frame after the upgrade (routes/streams/index.ts).
      if (request.headers.upgrade === undefined) throw err;
      request.ramify.scopeError = err;
    }
  });

  app.addHook('preHandler', async (request, reply) => {
    const match = routeOf(request);
    if (match?.route.target !== 'placed') return;
    const body = (request.body ?? {}) as CreateSandboxRequest;
    const target = await placeCreate(core, match.operationId === 'createSandbox' ? body : {}, callerOf(request).teamId);
    forward(request, reply, target, Buffer.from(JSON.stringify(request.body ?? {})));
  });
}

