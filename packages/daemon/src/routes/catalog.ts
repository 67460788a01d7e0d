/**
 * Snapshot, template and audit routes.
 */
import { PassThrough } from 'node:stream';
import { AuditEntry, SnapshotInfo, TemplateBuildQuery, TemplateInfo, TemplateSpec, isRamifyError, type TemplateBuildEvent } from '@ramify/contracts';
import { assertCanBuildTemplates, buildTemplate, requireOperator, deleteSnapshot, deleteTemplate, getSnapshot, listAudit, listSnapshots, listTemplates, toSnapshotInfo, toTemplateInfo } from '@ramify/core';
import { z } from 'zod';
import { IdParams, route, type RouteSpec } from '../http/route.js';

const AuditQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(1000).optional(),
  sandboxId: z.string().min(1).max(128).optional(),
  before: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional()
    .describe("Paging backwards: only entries with an id below this one (the last id of the previous page). Ids are numbered per team (1, 2, 3, ...), so a cursor only moves within the caller's own log"),
  anonymous: z.enum(['true', 'false']).default('false')
    .describe("'true': the log of calls that carried no valid key (numbered on their own) instead of the team's; the default team's admin keys only (else 403)"),
});

export const catalogRoutes: RouteSpec[] = [
  route({
    operation: 'listSnapshots', summary: "List the team's snapshots (and the shared templates' images)", response: z.object({ snapshots: z.array(SnapshotInfo) }),
    handler: async ({ core, actor }) => ({ snapshots: (await listSnapshots(core, { teamId: actor.teamId })).map(toSnapshotInfo) }),
  }),
  route({
    operation: 'getSnapshot', summary: 'Get a snapshot (by id or name)', params: IdParams, response: SnapshotInfo,
    handler: async ({ core, params, actor }) => toSnapshotInfo(await getSnapshot(core, params.id, actor.teamId)),
  }),
  route({
    operation: 'deleteSnapshot', summary: 'Delete a snapshot (409 while a sandbox or template needs it)',
    params: IdParams, status: 204,
    handler: async ({ core, params, actor }) => deleteSnapshot(core, params.id, actor.teamId),
  }),
  route({
    operation: 'listTemplates', summary: "List the templates the team may use: its own and the shared ones (the default team's)", response: z.object({ templates: z.array(TemplateInfo) }),
    handler: async ({ core, actor }) => ({ templates: (await listTemplates(core, actor.teamId)).map(toTemplateInfo) }),
  }),
  route({
    operation: 'buildTemplate', summary: "Build a template of the caller's team (the default team's are shared with every team); the response is an NDJSON stream of TemplateBuildEvent",
    body: TemplateSpec, query: TemplateBuildQuery, response: 'ndjson',
    handler: async ({ core, body, query, request, reply, actor }) => {
      const runtimes = query.runtime;
      assertCanBuildTemplates(core, runtimes);
      const out = new PassThrough();
      const abort = new AbortController();
      reply.raw.on('close', () => reply.raw.writableFinished || abort.abort());
      const send = (event: TemplateBuildEvent): boolean => out.write(`${JSON.stringify(event)}\n`);
      const started = Date.now();
      void buildTemplate(core, body, { onEvent: send, signal: abort.signal, teamId: actor.teamId, ...(runtimes ? { runtimes } : {}) })
        .then((template) => send({ type: 'done', template: toTemplateInfo(template), elapsedMs: Date.now() - started }))
        .catch((err: unknown) => {
          const code = isRamifyError(err) ? err.code : 'INTERNAL';
          request.ramify.errorCode = code;
          send({ type: 'error', code, message: isRamifyError(err) ? err.message : 'internal error' });
          if (!isRamifyError(err)) request.log.error({ err }, 'template build failed');
        })
        .finally(() => out.end());
      return reply.type('application/x-ndjson').send(out);
    },
  }),
  route({
    operation: 'deleteTemplate', summary: "Delete one of the team's templates and its images (409 while a live sandbox or another template needs it; 403 for a shared one)",
    params: IdParams, status: 204,
    handler: async ({ core, params, actor }) => deleteTemplate(core, params.id, actor.teamId),
  }),
  route({
    operation: 'listAudit',
    summary: "The team's audit log (its keys' calls), newest first, ids numbered per team; with anonymous=true (the default team's admin keys only) the calls that carried no valid key",
    description: "id: the entry's number in the caller's team's log (1, 2, 3, ...; the calls without a valid key are numbered on their own), so ids count "
      + "the team's own audited calls and never show other teams' activity. before: the last id of the previous page; it only ever selects the caller's "
      + 'own entries (a number past its newest entry starts from the newest).',
    query: AuditQuery, response: z.object({ entries: z.array(AuditEntry) }),
    handler: async ({ core, query, actor }) => {
      if (query.anonymous === 'true') requireOperator(actor, 'the audit log of calls without a valid key');
      return {
        entries: await listAudit(core.store, {
          teamId: query.anonymous === 'true' ? null : actor.teamId, limit: query.limit ?? 100, sandboxId: query.sandboxId, ...(query.before !== undefined ? { before: query.before } : {}),
        }),
      };
    },
  }),
];
