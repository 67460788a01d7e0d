/**
 * Audit: one entry per call of a mutating route (its config names an `action`) and per call an MCP tool
 * made (`x-ramify-mcp-tool`, see mcp-tool.ts; a read's action is `read`), written when the response has
 * been sent, with who (API key id and its team, null when unauthenticated), what (method, path, action,
 * sandbox, MCP tool), when, and the outcome (status, error code). In the API/host split the API process
 * records the HTTP calls it forwards and the host skips them (roles/forward-audit.ts).
 */
import { recordAudit, type Clock, type Logger, type Store } from '@ramify/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RouteConfig } from './route.js';

/** Action of an audited call to a route that changes nothing (only MCP tools' reads are audited). */
export const READ_ACTION = 'read';

/** The onResponse hook. */
export function auditHook(store: Store, clock: Clock, logger: Logger): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  return async (request, reply) => {
    const config = request.routeOptions.config as Partial<RouteConfig> | undefined;
    if (!config?.action && !request.ramify?.tool) return;
    // Forwarded by an API process, which records it (roles/forward-audit.ts): once, not here again.
    if (request.ramify?.forwarded) return;
    await writeAudit(store, clock, logger, request, { action: config?.action ?? READ_ACTION, status: reply.statusCode });
  };
}

/** Write one audit entry for `request` (also used by WebSocket routes, which have no onResponse). */
export async function writeAudit(
  store: Store,
  clock: Clock,
  logger: Logger,
  request: FastifyRequest,
  outcome: { action: string; status: number; errorCode?: string | null },
): Promise<void> {
  const params = (request.params ?? {}) as { id?: unknown };
  const ok = await recordAudit(store, {
    at: clock.now(),
    apiKeyId: request.ramify.actor?.keyId ?? null,
    teamId: request.ramify.actor?.teamId ?? null,
    method: request.method,
    path: request.url.split('?')[0],
    action: outcome.action,
    sandboxId: typeof params.id === 'string' ? params.id : request.ramify.sandboxId,
    status: outcome.status,
    errorCode: outcome.errorCode ?? request.ramify.errorCode,
    tool: request.ramify.tool,
  });
  if (!ok) logger.error('audit write failed', { method: request.method, path: request.url, action: outcome.action });
}
