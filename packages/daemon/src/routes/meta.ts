/**
 * Unauthenticated routes: health and the OpenAPI document.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { WarmPoolHealth } from '@ramify/contracts';
import type { WarmPoolStats } from '@ramify/core';
import { buildOpenApi, type ExtraOperation } from '../http/openapi.js';
import { route, type RouteSpec } from '../http/route.js';
import { streamDocs } from './streams/index.js';

/** The daemon's version (from its package.json). */
export const DAEMON_VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** The pool's stats as health shows them: totals, and per runtime the target and idle counts. */
function poolHealth(stats: WarmPoolStats): WarmPoolHealth {
  const runtimes: WarmPoolHealth['runtimes'] = {};
  for (const t of stats.templates) {
    const r = (runtimes[t.runtime] ??= { target: 0, idle: 0 });
    r.target += t.target;
    r.idle += t.idle;
  }
  const { mode, budgetMB, hits, misses, idle, filling, memoryMB } = stats;
  return { mode, budgetMB, hits, misses, idle, filling, memoryMB, runtimes };
}

/** Health and OpenAPI routes; the document covers `documented`, these two, the streams and `extras` (e.g. `/mcp`). */
export function metaRoutes(documented: readonly RouteSpec[], extras: readonly ExtraOperation[] = []): RouteSpec[] {
  const meta: RouteSpec[] = [
    route({
      operation: 'getHealth', summary: 'Liveness and available runtimes',
      response: z.object({
        ok: z.literal(true),
        version: z.string(),
        /** Runtime names, the default first. */
        runtimes: z.array(z.string()),
        /** Per available runtime: its one-line summary (version, acceleration and why). */
        runtimeInfo: z.record(z.string(), z.string()),
        /** Runtimes this host lacks, with the reason and what to install. */
        unavailableRuntimes: z.record(z.string(), z.string()),
        /** The warm pool of restored idle sandboxes creates claim: sizes, hits, misses. */
        pool: WarmPoolHealth,
      }),
      handler: async ({ core }) => ({
        ok: true,
        version: DAEMON_VERSION,
        runtimes: core.runtimes.map((r) => r.name),
        runtimeInfo: Object.fromEntries(core.runtimes.map((r) => [r.name, r.summary ?? r.name])),
        unavailableRuntimes: Object.fromEntries(Object.entries(core.unavailableRuntimes ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string')),
        pool: poolHealth(core.pool.stats()),
      }),
    }),
    route({
      operation: 'getOpenApi', summary: 'This document',
      handler: async () => document,
    }),
  ];
  const document = buildOpenApi([...meta, ...documented], [...streamDocs, ...extras], DAEMON_VERSION);
  return meta;
}
