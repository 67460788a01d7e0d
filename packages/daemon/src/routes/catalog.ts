/**
 * Snapshot, template and audit routes.
 */
import { PassThrough } from 'node:stream';
import { AuditEntry, SnapshotInfo, TemplateBuildQuery, TemplateInfo, TemplateSpec, isRamifyError, type TemplateBuildEvent } from '@ramify/contracts';
import { assertCanBuildTemplates, buildTemplate, deleteSnapshot, deleteTemplate, getSnapshot, listAudit, listSnapshots, listTemplates, toSnapshotInfo, toTemplateInfo } from '@ramify/core';
import { z } from 'zod';
import { IdParams, route, type RouteSpec } from '../http/route.js';

const AuditQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(1000).optional(), sandboxId: z.string().min(1).max(128).optional() });

export const catalogRoutes: RouteSpec[] = [
  route({
    method: 'GET', url: '/v1/snapshots', summary: 'List snapshots', response: z.object({ snapshots: z.array(SnapshotInfo) }),
    handler: async ({ core }) => ({ snapshots: (await listSnapshots(core)).map(toSnapshotInfo) }),
  }),
  route({
    method: 'GET', url: '/v1/snapshots/:id', summary: 'Get a snapshot (by id or name)', params: IdParams, response: SnapshotInfo,
    handler: async ({ core, params }) => toSnapshotInfo(await getSnapshot(core, params.id)),
  }),
  route({
    method: 'DELETE', url: '/v1/snapshots/:id', summary: 'Delete a snapshot (409 while a sandbox or template needs it)', action: 'snapshot.delete',
    params: IdParams, status: 204,
    handler: async ({ core, params }) => deleteSnapshot(core, params.id),
  }),
  route({
    method: 'GET', url: '/v1/templates', summary: 'List templates', response: z.object({ templates: z.array(TemplateInfo) }),
    handler: async ({ core }) => ({ templates: (await listTemplates(core)).map(toTemplateInfo) }),
  }),
  route({
    method: 'POST', url: '/v1/templates', summary: 'Build a template; the response is an NDJSON stream of TemplateBuildEvent', action: 'template.build',
    body: TemplateSpec, query: TemplateBuildQuery, response: 'ndjson',
    handler: async ({ core, body, query, request, reply }) => {
      const runtimes = query.runtime;
      assertCanBuildTemplates(core, runtimes);
      const out = new PassThrough();
      const abort = new AbortController();
      reply.raw.on('close', () => reply.raw.writableFinished || abort.abort());
      const send = (event: TemplateBuildEvent): boolean => out.write(`${JSON.stringify(event)}\n`);
      const started = Date.now();
      void buildTemplate(core, body, { onEvent: send, signal: abort.signal, ...(runtimes ? { runtimes } : {}) })
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
    method: 'DELETE', url: '/v1/templates/:id', summary: 'Delete a template and its images (409 while a live sandbox or another template needs it)', action: 'template.delete',
    params: IdParams, status: 204,
    handler: async ({ core, params }) => deleteTemplate(core, params.id),
  }),
  route({
    method: 'GET', url: '/v1/audit', summary: 'Audit log, newest first', query: AuditQuery, response: z.object({ entries: z.array(AuditEntry) }),
    handler: async ({ core, query }) => ({ entries: await listAudit(core.store, { limit: query.limit ?? 100, sandboxId: query.sandboxId }) }),
  }),
];
