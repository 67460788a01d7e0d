/**
 * Private network routes: networks as a resource (create, list, get, delete) and a sandbox's networks
 * (list, attach live, detach live). Names are `<alias>.<network>.internal`; see docs/design/NETWORKS.md.
 */
import { CreateNetworkRequest, ListNetworksResponse, NetworkInfo, NetworkJoinRequest, SandboxNetworkInfo, SandboxNetworksResponse } from '@ramify/contracts';
import {
  attachNetwork, createNetwork, deleteNetwork, detachNetwork, getNetwork, listNetworks, listSandboxNetworks, toNetworkInfo, toSandboxNetworkInfo,
} from '@ramify/core';
import { z } from 'zod';
import { IdParams, route, type RouteSpec } from '../http/route.js';

/** `/v1/networks/:network` params (a name or an id). */
const NetworkParams = z.strictObject({ network: z.string().min(1).max(128) });
/** `/v1/sandboxes/:id/networks/:network` params. */
const MemberParams = z.strictObject({ id: z.string().min(1).max(128), network: z.string().min(1).max(128) });

const ISOLATION = 'Sandboxes on a network reach each other by any protocol and port, both ways, at their addresses or as <alias>.<network>.internal '
  + '(answered by the daemon\'s resolver to members only; NXDOMAIN for everyone else, never asked upstream). Everything else between sandboxes stays refused; '
  + 'egress policies still govern the internet alone.';

export const networkRoutes: RouteSpec[] = [
  route({
    operation: 'createNetwork', status: 201, body: CreateNetworkRequest, response: NetworkInfo,
    summary: 'Create a private network (its name a DNS label); 409 NETWORK_EXISTS when the name is taken', description: ISOLATION,
    handler: async ({ core, body, actor }) => toNetworkInfo(await createNetwork(core, actor.teamId, body)),
  }),
  route({
    operation: 'listNetworks', summary: 'Private networks, oldest first, with their members', response: ListNetworksResponse,
    handler: async ({ core, actor }) => ({ networks: (await listNetworks(core, actor.teamId)).map(toNetworkInfo) }),
  }),
  route({
    operation: 'getNetwork', summary: 'A private network (by name or id) with its members', params: NetworkParams, response: NetworkInfo,
    handler: async ({ core, params, actor }) => toNetworkInfo(await getNetwork(core, actor.teamId, params.network)),
  }),
  route({
    operation: 'deleteNetwork', status: 204, params: NetworkParams,
    summary: 'Delete a private network; 409 NETWORK_IN_USE naming its sandboxes (details.sandboxes) while any is on it',
    handler: async ({ core, params, actor }) => deleteNetwork(core, actor.teamId, params.network),
  }),
  route({
    operation: 'listSandboxNetworks', summary: 'The private networks a sandbox is on, with its alias and name on each', params: IdParams, response: SandboxNetworksResponse,
    handler: async ({ core, params }) => ({ networks: (await listSandboxNetworks(core, params.id)).map(toSandboxNetworkInfo) }),
  }),
  route({
    operation: 'joinNetwork', status: 201, params: IdParams, body: NetworkJoinRequest, response: SandboxNetworkInfo,
    summary: 'Put a running or paused sandbox on a private network, live (stored, then enforced, before it answers); 404 NETWORK_NOT_FOUND, 409 NETWORK_ALIAS_TAKEN',
    description: `The alias defaults to sbx-<last 8 characters of the id>. Attaching again with the same alias (or none) is a no-op. ${ISOLATION}`,
    handler: async ({ core, params, body }) => toSandboxNetworkInfo(await attachNetwork(core, params.id, body)),
  }),
  route({
    operation: 'leaveNetwork', status: 204, params: MemberParams,
    summary: "Take a sandbox off a private network, live: its open connections to the network's members are cut, its name there stops resolving (idempotent)",
    handler: async ({ core, params }) => detachNetwork(core, params.id, params.network),
  }),
];
