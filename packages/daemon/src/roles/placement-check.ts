/**
 * The host role's side of placement (docs/design/SCALE-OUT.md): a `placed` route (a create, a template
 * build), a fork (its reservation holding room for all `count` children), or a resume of a sandbox recorded
 * on another host, runs here only with a live reservation of the store for this host in the
 * `x-ramify-placement` header (a client cannot pick a host, nor bypass the API's
 * capacity accounting); the reservation is released once the call answered (the sandbox's own row counts
 * from then on). Any other call on a sandbox recorded on another host is refused: it would act on a runtime
 * instance this host does not hold.
 */
import { ForkRequest, matchRoute } from '@ramify/contracts';
import { acceptPlacement, acceptSandboxHere, PLACEMENT_HEADER, type Core } from '@ramify/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { validate } from '../http/validate.js';

/** Install the check on the host role's `app` (after the auth and scope hooks). */
export function installPlacementCheck(app: FastifyInstance, core: Core): void {
  const held = new WeakMap<object, string>();
  app.addHook('onRequest', async (request) => {
    const match = matchRoute(request.method, request.url.split('?')[0] ?? '');
    if (!match || match.route.target === 'any' || request.ramify.scopeError) return;
    const header = request.headers[PLACEMENT_HEADER];
    const reservationId = typeof header === 'string' ? header : undefined;
    if (match.route.target === 'placed') {
      held.set(request, (await acceptPlacement(core, reservationId)).id);
      return;
    }
    // A fork's reservation must cover its `count`: checked once the body is read (the preHandler below).
    if (match.operationId === 'forkSandbox') return;
    const reservation = await acceptSandboxHere(core, match.params.id ?? '', reservationId, { move: match.operationId === 'resumeSandbox', where: 'call the API, which forwards to its host' });
    if (reservation) held.set(request, reservation.id);
  });
  app.addHook('preHandler', async (request: FastifyRequest) => {
    if (request.ramify.scopeError || matchRoute(request.method, request.url.split('?')[0] ?? '')?.operationId !== 'forkSandbox') return;
    const { count } = validate(ForkRequest, request.body ?? {}, 'body');
    const header = request.headers[PLACEMENT_HEADER];
    held.set(request, (await acceptPlacement(core, typeof header === 'string' ? header : undefined, count)).id);
  });
  app.addHook('onResponse', async (request) => {
    const id = held.get(request);
    if (id) await core.store.releaseReservation(id).catch(() => undefined);
  });
}
