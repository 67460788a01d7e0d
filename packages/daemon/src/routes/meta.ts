/**
 * Unauthenticated routes: health and the OpenAPI document.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { buildOpenApi } from '../http/openapi.js';
import { route, type RouteSpec } from '../http/route.js';
import { streamDocs } from './streams.js';

/** The daemon's version (from its package.json). */
export const DAEMON_VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** Health and OpenAPI routes; the document covers `documented` plus these two. */
export function metaRoutes(documented: readonly RouteSpec[]): RouteSpec[] {
  const meta: RouteSpec[] = [
    route({
      method: 'GET', url: '/v1/health', summary: 'Liveness and available runtimes', auth: false,
      response: z.object({ ok: z.literal(true), version: z.string(), runtimes: z.array(z.string()) }),
      handler: async ({ core }) => ({ ok: true, version: DAEMON_VERSION, runtimes: core.runtimes.map((r) => r.name) }),
    }),
    route({
      method: 'GET', url: '/v1/openapi.json', summary: 'This document', auth: false,
      handler: async () => document,
    }),
  ];
  const document = buildOpenApi([...meta, ...documented], streamDocs, DAEMON_VERSION);
  return meta;
}
