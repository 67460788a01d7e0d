/**
 * Egress policy routes: read and atomically replace a sandbox's egress policy, read its egress log.
 */
import { EgressLogQuery, EgressLogResponse, EgressPolicyInfo, SetEgressRequest } from '@ramify/contracts';
import { getEgressLog, getEgressPolicy, setEgressPolicy, toEgressPolicyInfo } from '@ramify/core';
import { IdParams, route, type RouteSpec } from '../http/route.js';

export const egressRoutes: RouteSpec[] = [
  route({
    operation: 'getEgress', summary: "Get a sandbox's egress policy (normalised rules)", params: IdParams, response: EgressPolicyInfo,
    handler: async ({ core, params }) => toEgressPolicyInfo(await getEgressPolicy(core, params.id)),
  }),
  route({
    operation: 'setEgress',
    summary: "Replace a sandbox's egress policy atomically ({ rules } or { mode: 'deny-all' | 'open' }); live on running and paused sandboxes. A bad rule is a 400 naming it",
    params: IdParams, body: SetEgressRequest, response: EgressPolicyInfo,
    handler: async ({ core, params, body }) => toEgressPolicyInfo(await setEgressPolicy(core, params.id, body)),
  }),
  route({
    operation: 'getEgressLog', summary: "A sandbox's egress verdicts, newest first", params: IdParams, query: EgressLogQuery,
    response: EgressLogResponse,
    handler: async ({ core, params, query }) => ({ entries: await getEgressLog(core, params.id, { limit: query.limit }) }),
  }),
];
