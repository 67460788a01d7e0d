/**
 * Team scoping of path ids (docs/design/TEAMS.md): the one place that checks a route's sandbox belongs
 * to the caller's team. Every route under `/v1/sandboxes/:id` (REST and WebSocket alike) is checked
 * here, before its handler and before the activity hook counts it as use; another team's sandbox is 404
 * `SANDBOX_NOT_FOUND`, exactly as an unknown one. Routes naming other ids scope them in their use-case
 * (snapshots, templates, keys, teams, SSH keys take the caller's team); {@link scopeOf} refuses at start-up
 * a route that names an id it does not know how to scope, so a new resource cannot open by omission.
 */
import { ownedSandbox, type Core } from '@ramify/core';
import type { FastifyRequest } from 'fastify';
import { callerOf } from './request-context.js';
import type { RouteConfig } from './route.js';

/** How a route's path is scoped: `sandbox` (checked by {@link scopeHook}) or `use-case` (its use-case takes the caller's team). */
export type RouteScope = 'sandbox' | 'use-case';

/**
 * Routes with an id in the path whose use-case scopes the id by the caller's team itself. A new routed
 * resource (e.g. `/v1/networks/:id`) goes here once its use-case takes the team, or under a sandbox.
 */
const SCOPED_BY_USE_CASE: ReadonlySet<string> = new Set([
  '/v1/snapshots/:id',
  '/v1/templates/:id',
  '/v1/ssh-keys/:keyId',
  '/v1/keys/:keyId',
  '/v1/teams/:team',
  '/v1/networks/:network',
  '/v1/webhooks/:webhookId',
  '/v1/webhooks/:webhookId/deliveries',
]);

/**
 * The scope of a route by its Fastify path.
 * @throws Error (at start-up) for an authenticated route naming an id that is neither a sandbox's nor listed in {@link SCOPED_BY_USE_CASE}.
 */
export function scopeOf(url: string, auth: boolean): RouteScope {
  if (url === '/v1/sandboxes/:id' || url.startsWith('/v1/sandboxes/:id/')) return 'sandbox';
  if (!auth || !url.includes('/:') || SCOPED_BY_USE_CASE.has(url)) return 'use-case';
  throw new Error(`route ${url} names an id but nothing scopes it to the caller's team: scope it in http/scope.ts`);
}

/**
 * The onRequest hook (after auth): a sandbox-scoped route's sandbox must be the caller's team's. A REST
 * request is refused with the error; a WebSocket request keeps it in `request.ramify.scopeError` for its
 * stream to send as the error frame (see routes/streams/index.ts).
 */
export function scopeHook(core: Core): (request: FastifyRequest) => Promise<void> {
  return async (request) => {
    const config = request.routeOptions.config as Partial<RouteConfig> | undefined;
    if (config?.scope !== 'sandbox' || config.auth !== true) return;
    const id = (request.params as { id?: unknown } | undefined)?.id;
    try {
      await ownedSandbox(core, callerOf(request).teamId, typeof id === 'string' ? id : '');
    } catch (err) {
      if (request.headers.upgrade === undefined) throw err;
      request.ramify.scopeError = err;
    }
  };
}
