/**
 * Sandbox lifecycle routes: create, list, get, kill, pause, resume, fork, snapshot, timeout. A sandbox
 * belongs to its creator's team (a fork's children to its parent's); the scope hook checks the path's.
 */
import { CreateSandboxRequest, ForkRequest, ForkResponse, ListSandboxesQuery, ListSandboxesResponse, MAX_SANDBOX_TIMEOUT_MS, SandboxInfo, SetTimeoutRequest, SnapshotInfo, SnapshotRequest } from '@ramify/contracts';
import {
  createSandbox,
  forkSandbox,
  getSandbox,
  killSandbox,
  listSandboxes,
  parseListQuery,
  pauseSandbox,
  resumeSandbox,
  setSandboxTimeout,
  snapshotSandbox,
  toSandboxInfo,
  toSnapshotInfo,
} from '@ramify/core';
import { z } from 'zod';
import { IdParams, NoBody, route, type RouteSpec } from '../http/route.js';

const ResumeRequest = z.strictObject({ timeoutMs: z.number().int().positive().max(MAX_SANDBOX_TIMEOUT_MS).optional() });

export const sandboxRoutes: RouteSpec[] = [
  route({
    operation: 'createSandbox', summary: 'Create a sandbox from a template or snapshot',
    body: CreateSandboxRequest, response: SandboxInfo, status: 201,
    handler: async ({ core, body, request, actor }) => {
      const record = await createSandbox(core, body, { teamId: actor.teamId });
      request.ramify.sandboxId = record.id;
      return toSandboxInfo(record, core.options.ingress);
    },
  }),
  route({
    operation: 'listSandboxes', summary: "List the caller's team's sandboxes (filter by state and metadata, paginated)",
    query: ListSandboxesQuery, response: ListSandboxesResponse,
    handler: async ({ core, query, actor }) => listSandboxes(core, { ...parseListQuery(query), teamId: actor.teamId }),
  }),
  route({
    operation: 'getSandbox', summary: 'Get a sandbox', params: IdParams, response: SandboxInfo,
    handler: async ({ core, params }) => toSandboxInfo(await getSandbox(core, params.id), core.options.ingress),
  }),
  route({
    operation: 'killSandbox', summary: 'Kill a sandbox (idempotent)', params: IdParams, status: 204,
    handler: async ({ core, params }) => {
      await killSandbox(core, params.id);
    },
  }),
  route({
    operation: 'pauseSandbox', summary: 'Pause (checkpoint) a sandbox; 409 CHECKPOINT_BLOCKED keeps it running',
    params: IdParams, body: NoBody.optional(), response: SandboxInfo,
    handler: async ({ core, params }) => toSandboxInfo(await pauseSandbox(core, params.id), core.options.ingress),
  }),
  route({
    operation: 'resumeSandbox', summary: 'Resume a paused sandbox',
    params: IdParams, body: ResumeRequest.optional(), response: SandboxInfo,
    handler: async ({ core, params, body }) => toSandboxInfo(await resumeSandbox(core, params.id, { timeoutMs: body?.timeoutMs }), core.options.ingress),
  }),
  route({
    operation: 'forkSandbox', summary: 'Fork a running or paused sandbox into count new sandboxes',
    params: IdParams, body: ForkRequest, response: ForkResponse, status: 201,
    handler: async ({ core, params, body }) => ({ sandboxes: (await forkSandbox(core, params.id, body))
      .map((r) => toSandboxInfo(r, core.options.ingress)) }),
  }),
  route({
    operation: 'snapshotSandbox', summary: 'Take a named snapshot that outlives the sandbox',
    params: IdParams, body: SnapshotRequest, response: SnapshotInfo, status: 201,
    handler: async ({ core, params, body }) => toSnapshotInfo(await snapshotSandbox(core, params.id, body)),
  }),
  route({
    operation: 'setSandboxTimeout', summary: "Set a sandbox's lifetime from now",
    params: IdParams, body: SetTimeoutRequest, response: SandboxInfo,
    handler: async ({ core, params, body }) => toSandboxInfo(await setSandboxTimeout(core, params.id, body.timeoutMs), core.options.ingress),
  }),
];
