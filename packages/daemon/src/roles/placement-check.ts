/**
 * The host role's side of placement (docs/design/SCALE-OUT.md): a `placed` route (a create, a template
 * build), or a resume of a sandbox recorded on another host, runs here only with a live reservation of the
 * store for this host in the `x-ramify-placement` header (a client cannot pick a host, nor bypass the API's
 * capacity accounting); the reservation is released once the call answered (the sandbox's own row counts
 * from then on). Any other call on a sandbox recorded on another host is refused: it would act on a runtime
 * instance this host does not hold.
 */
import { matchRoute, RamifyError } from '@ramify/contracts';
import { acceptPlacement, PLACEMENT_HEADER, type Core } from '@ramify/core';
import type { FastifyInstance } from 'fastify';

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
    const record = await core.store.getSandbox(match.params.id ?? '');
    if (!record || record.hostId === core.hostId || record.hostId === null) return;
    if (match.operationId === 'resumeSandbox' && record.state === 'paused') {
      held.set(request, (await acceptPlacement(core, reservationId)).id);
      return;
    }
    throw new RamifyError('PLACEMENT_INVALID', `sandbox '${record.id}' is on host '${record.hostId}', not this one (${core.hostId}): call the API, which forwards to its host`, {
      sandboxId: record.id, hostId: record.hostId,
    });
  });
  app.addHook('onResponse', async (request) => {
    const id = held.get(request);
    if (id) await core.store.releaseReservation(id).catch(() => undefined);
  });
}
