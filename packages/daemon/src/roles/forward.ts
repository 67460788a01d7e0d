/**
 * The API role's forwarding (docs/design/SCALE-OUT.md): after authentication and team scoping (another
 * team's sandbox is 404 before anything is forwarded), a request whose route the route table marks
 * `sandbox-host` goes to the host recorded on its sandbox, and a `placed` one to the host placement chose
 * (its reservation in the `x-ramify-placement` header, which the host checks against the store). Requests
 * travel through http-proxy-3: HTTP with streaming bodies both ways, and WebSocket upgrades. The caller's
 * own `Authorization` header goes along: the host authenticates it again against the shared store.
 * A fork goes to its parent's host with a reservation there for all its children (`placeFork`).
 * `any` routes are served here from the store by the same handlers as on one machine, and so is
 * `ssh-access` when this process runs the SSH relay (ssh/relay.ts): its command then names the relay.
 */
import { Readable } from 'node:stream';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ForkRequest, matchRoute, RamifyError, type CreateSandboxRequest, type RouteMatch } from '@ramify/contracts';
import { killOnLostHost, placeCreate, placeFork, placeOnSandbox, PLACEMENT_HEADER, type Core, type PlacementTarget } from '@ramify/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createProxyServer } from 'http-proxy-3';
import { callerOf } from '../http/request-context.js';
import { AUDIT_ERROR_HEADER, AUDIT_SANDBOX_HEADER, FORWARDED_HEADER, forwardingSecret, signForwarded } from './forward-audit.js';
import { jsonBody, validate } from '../http/validate.js';

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
  const secret = forwardingSecret(core);
  // The host's answer says what the audit entry needs (its error code, the sandbox a create made): read and dropped.
  const forwarded = new WeakMap<IncomingMessage, FastifyRequest>();
  proxy.on('proxyRes', (proxyRes, req) => {
    const request = forwarded.get(req);
    const errorCode = proxyRes.headers[AUDIT_ERROR_HEADER];
    const sandboxId = proxyRes.headers[AUDIT_SANDBOX_HEADER];
    delete proxyRes.headers[AUDIT_ERROR_HEADER];
    delete proxyRes.headers[AUDIT_SANDBOX_HEADER];
    if (!request) return;
    if (typeof errorCode === 'string') request.ramify.errorCode = errorCode;
    if (typeof sandboxId === 'string') request.ramify.sandboxId = sandboxId;
  });
  const failed = (target: PlacementTarget, res: ServerResponse | Socket, request: FastifyRequest) => (err: Error): void => {
    core.logger.warn('forwarding failed', { hostId: target.hostId, url: target.url, error: err.message });
    if (!('writeHead' in res)) return void res.destroy();
    if (res.headersSent) return void res.destroy();
    const error = new RamifyError('RUNTIME_UNAVAILABLE', `host '${target.hostId}' at ${target.url} did not answer: ${err.message}`, { hostId: target.hostId });
    request.ramify.errorCode = error.code;
    res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify(error.toBody()));
  };
  const forward = async (request: FastifyRequest, reply: FastifyReply, target: PlacementTarget, body?: Buffer): Promise<void> => {
    const raw = request.raw;
    // Only placement and this process set these headers: a client's own are dropped.
    delete raw.headers[PLACEMENT_HEADER];
    delete raw.headers[FORWARDED_HEADER];
    const headers: Record<string, string> = target.reservation ? { [PLACEMENT_HEADER]: target.reservation.id } : {};
    const upgrade = upgradeOf(raw);
    if (upgrade) {
      // A stream is audited by the host, where its outcome is decided (roles/forward-audit.ts).
      reply.hijack();
      proxy.ws(raw, upgrade.socket, upgrade.head, { target: target.url, headers }, failed(target, upgrade.socket, request));
      return;
    }
    // Audited here, once, by the app's onResponse hook (it runs for a hijacked reply too, once the answer
    // has gone), with what the host's answer said; the host skips the calls it sees signed.
    headers[FORWARDED_HEADER] = signForwarded(await secret(), raw.method ?? 'GET', raw.url ?? '/', core.clock.now());
    forwarded.set(raw, request);
    reply.hijack();
    if (body) {
      delete raw.headers['transfer-encoding'];
      headers['content-length'] = String(body.length);
    }
    proxy.web(raw, reply.raw, { target: target.url, headers, ...(body ? { buffer: Readable.from([body]) } : {}) }, failed(target, reply.raw, request));
  };

  app.addHook('onRequest', async (request, reply) => {
    const match = routeOf(request);
    // A fork is placed once its body is read (the preHandler below): its reservation is sized by `count`.
    if (match?.route.target !== 'sandbox-host' || match.operationId === 'forkSandbox' || request.ramify.scopeError) return;
    // With its own SSH relay the API grants SSH access itself (the token is in the shared store), pointing at the relay.
    if (match.operationId === 'createSshAccess' && core.options.ssh) return;
    const record = await core.store.getSandbox(match.params.id ?? '');
    if (!record) return;
    try {
      const target = await placeOnSandbox(core, record, match.operationId === 'resumeSandbox' ? 'resume' : 'call');
      await forward(request, reply, target);
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
    if (match?.operationId === 'forkSandbox') {
      // The parent's host must have room for every child: reserved there, or refused before anything forks.
      const body = jsonBody(request.body);
      const { count } = validate(ForkRequest, body, 'body');
      const record = await core.store.getSandbox(match.params.id ?? '');
      if (!record) return;
      await forward(request, reply, await placeFork(core, record, count), Buffer.from(JSON.stringify(body)));
      return;
    }
    if (match?.route.target !== 'placed') return;
    // A body sent as another type than JSON is refused here, as the host would (not stringified as a stream).
    const body = jsonBody(request.body);
    const target = await placeCreate(core, match.operationId === 'createSandbox' ? (body as CreateSandboxRequest) : {}, callerOf(request).teamId);
    await forward(request, reply, target, Buffer.from(JSON.stringify(body)));
  });
}

