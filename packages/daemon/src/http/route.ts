/**
 * Declarative routes: each route names its operation in contracts' route table (`ROUTES`: method, path,
 * audit action, auth), its schemas (validation and OpenAPI) and success status, and a handler that calls
 * one use-case. {@link mountRoutes} registers them on Fastify with the shared validation; {@link buildOpenApi}
 * documents the same list.
 */
import { ROUTES, type OperationId } from '@ramify/contracts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { observing, runOperation, withCallContext, type Actor, type Core } from '@ramify/core';
import { z } from 'zod';
import { callerOf } from './request-context.js';
import { scopeOf, type RouteScope } from './scope.js';
import { validate } from './validate.js';

/** What a handler gets: the validated request parts, the caller and the core context. */
export interface RouteContext<B, Q, P> {
  core: Core;
  /**
   * The authenticated caller (its key, team and role); reading it on a route without auth throws
   * `UNAUTHORIZED`. A sandbox in the path is the caller's team's already (http/scope.ts).
   */
  readonly actor: Actor;
  body: B;
  query: Q;
  params: P;
  request: FastifyRequest;
  reply: FastifyReply;
}

export interface RouteSpec<B extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, P extends z.ZodType = z.ZodType> {
  /** The route in contracts' table (`ROUTES[operation]`): its method, path, audit action and who may call it come from there. */
  operation: OperationId;
  summary: string;
  /** Longer prose for OpenAPI (limits, caveats); optional. */
  description?: string;
  /** JSON body schema; `raw` when the body is an unbuffered byte stream. */
  body?: B | 'raw';
  query?: Q;
  params?: P;
  /** Schema of the success response, for OpenAPI (`raw` for bytes, `ndjson` for a line stream). */
  response?: z.ZodType | 'raw' | 'ndjson';
  /** Success status; default 200 (204 sends no body). */
  status?: number;
  /**
   * `traced`: each call is a telemetry operation (a trace when tracing); `untraced` for scrapes and health
   * checks. Default: by the method and the app's {@link TracedCalls} (state-changing calls are traced, reads
   * (GET) only when the daemon traces `all`).
   */
  telemetry?: 'traced' | 'untraced';
  handler: (ctx: RouteContext<z.infer<B>, z.infer<Q>, z.infer<P>>) => Promise<unknown>;
}

/** Identity function that keeps the schemas' types flowing into the handler. */
export function route<B extends z.ZodType = z.ZodUndefined, Q extends z.ZodType = z.ZodUndefined, P extends z.ZodType = z.ZodUndefined>(
  spec: RouteSpec<B, Q, P>,
): RouteSpec {
  return spec as unknown as RouteSpec;
}

/** Per-route settings read by the auth, scope and audit hooks. */
export interface RouteConfig {
  action?: string;
  auth: boolean;
  /** How its path ids are scoped to the caller's team (see http/scope.ts). */
  scope: RouteScope;
}

/**
 * Which API calls are traces (`ramify serve --otlp-traces`): `writes` (default), the calls that change
 * something (POST, PUT, PATCH, DELETE); `all`, reads (GET) too. A client polling a sandbox or an event
 * list would otherwise send the collector a trace per poll.
 */
export type TracedCalls = 'writes' | 'all';

/** Whether calls of `spec` (method `method`) are telemetry operations under `traced`. */
function isTraced(spec: RouteSpec, method: string, traced: TracedCalls): boolean {
  if (spec.telemetry !== undefined) return spec.telemetry === 'traced';
  return traced === 'all' || method !== 'GET';
}

/**
 * Register every route on `app`; `traced` says which calls are traced (default `writes`).
 * @throws Error for a route naming an id nothing scopes to the caller's team (see {@link scopeOf}).
 */
export function mountRoutes(app: FastifyInstance, core: Core, routes: readonly RouteSpec[], traced: TracedCalls = 'writes'): void {
  for (const spec of routes) {
    const def = ROUTES[spec.operation];
    const action = 'action' in def ? def.action : undefined;
    const auth = def.auth !== 'public';
    const config: RouteConfig = { action, auth, scope: scopeOf(def.path, auth) };
    const traces = isTraced(spec, def.method, traced);
    app.route({
      method: def.method,
      url: def.path,
      config,
      handler: async (request, reply) => {
        const run = async (): Promise<unknown> => {
          // Raw routes get the unbuffered stream (the request itself when no Content-Type was sent, so nothing parsed it).
          const body = spec.body === 'raw' ? (request.body ?? request.raw) : spec.body ? validate(spec.body, request.body ?? {}, 'body') : undefined;
          const query = spec.query ? validate(spec.query, request.query ?? {}, 'query') : undefined;
          const params = spec.params ? validate(spec.params, request.params, 'params') : undefined;
          const result = await spec.handler({ core, body, query, params, request, reply, get actor() { return callerOf(request); } });
          if (reply.sent) return reply;
          reply.code(spec.status ?? 200);
          return spec.status === 204 ? reply.send() : reply.send(result);
        };
        if (spec.telemetry === 'untraced' || !auth || !observing(core)) return run();
        // A read still runs in its caller's context (its key), without an operation of its own.
        if (!traces) return inCallContext(request, core, run);
        return inCallContext(request, core, () => runOperation(core, { name: `${def.method} ${def.path}`, sandboxId: pathSandboxId(request), attributes: { 'http.request.method': def.method, 'http.route': def.path, ...(action ? { 'ramify.action': action } : {}) } }, run));
      },
    });
  }
}

/**
 * Run `fn` in the call context of `request` (docs/design/EVENTS.md): caused by the API, by its key. What
 * `fn` sets going (transitions, commands) is then recorded as that key's doing.
 */
export function inCallContext<T>(request: FastifyRequest, core: Core, fn: () => T): T {
  const actor = request.ramify?.actor;
  return actor && observing(core) ? withCallContext({ cause: 'api', keyId: actor.keyId, operation: null, task: null }, fn) : fn();
}

/** The sandbox id in `request`'s path, if any. */
function pathSandboxId(request: FastifyRequest): string | null {
  const id = (request.params as { id?: unknown } | undefined)?.id;
  return typeof id === 'string' && request.routeOptions.url?.startsWith('/v1/sandboxes/:id') ? id : null;
}

/** `/v1/sandboxes/:id` params. */
export const IdParams = z.strictObject({ id: z.string().min(1).max(128) });
/** `/v1/sandboxes/:id/processes/:pid` params. */
export const PidParams = z.strictObject({ id: z.string().min(1).max(128), pid: z.coerce.number().int().min(1) });
/** A POST that takes no fields (an empty object or no body at all). */
export const NoBody = z.strictObject({});
