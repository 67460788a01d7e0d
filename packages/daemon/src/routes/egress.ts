/**
 * Egress policy routes: read and atomically replace a sandbox's egress policy, read its egress log.
 */
import { EgressLogQuery, EgressLogResponse, EgressPolicyInfo, SetEgressRequest } from '@ramify/contracts';
import { getEgressLog, getEgressPolicy, setEgressPolicy, toEgressPolicyInfo } from '@ramify/core';
import { IdParams, route, type RouteSpec } from '../http/route.js';

export const egressRoutes: RouteSpec[] = [
  route({
    method: 'GET', url: '/v1/sandboxes/:id/egress', summary: "Get a sandbox's egress policy (normalised rules)", params: IdParams, response: EgressPolicyInfo,
    handler: async ({ core, params }) => toEgressPolicyInfo(await getEgressPolicy(core, params.id)),
  }),
  route({
    method: 'PUT', url: '/v1/sandboxes/:id/egress',
    summary: "Replace a sandbox's egress policy atomically ({ rules } or { mode: 'deny-all' | 'open' }); live on running and paused sandboxes. A bad rule is a 400 naming it",
    action: 'sandbox.egress', params: IdParams, body: SetEgressRequest, response: EgressPolicyInfo,
    handler: async ({ core, params, body }) => toEgressPolicyInfo(await setEgressPolicy(core, params.id, body)),
  }),
  route({
    method: 'GET', url: '/v1/sandboxes/:id/egress/log', summary: "A sandbox's egress verdicts, newest first", params: IdParams, query: EgressLogQuery,
    response: EgressLogResponse,
    handler: async ({ core, params, query }) => ({ entries: await getEgressLog(core, params.id, { limit: query.limit }) }),
  }),
];
