/**
 * Per-request state shared by the hooks: who called (the API key and its team and role, see
 * docs/design/TEAMS.md), what the audit entry should say, and the error code the error handler produced.
 */
import { RamifyError } from '@ramify/contracts';
import type { Actor } from '@ramify/core';
import type { FastifyRequest } from 'fastify';

export interface RequestContext {
  /** The authenticated caller; null on routes without auth, or before the auth hook ran. */
  actor: Actor | null;
  /** Set by handlers whose sandbox is not in the path (create, fork). */
  sandboxId: string | null;
  errorCode: string | null;
  /**
   * A WebSocket route's refusal by the scope hook (another team's or an unknown sandbox): the stream
   * sends it as its error frame after the upgrade, as any failure before a stream starts.
   */
  scopeError: unknown;
  /** The MCP tool the call is made for (header `x-ramify-mcp-tool`, see mcp-tool.ts); null otherwise. */
  tool: string | null;
  /**
   * Host role: the call was forwarded by an API process (its signature checked, roles/forward-audit.ts),
   * which writes its audit entry: this process does not.
   */
  forwarded: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    ramify: RequestContext;
  }
}

export function freshRequestContext(): RequestContext {
  return { actor: null, sandboxId: null, errorCode: null, scopeError: null, tool: null, forwarded: false };
}

/**
 * The authenticated caller of `request`.
 * @throws RamifyError `UNAUTHORIZED` when the request carried no valid key (never on an authenticated route).
 */
export function callerOf(request: FastifyRequest): Actor {
  const actor = request.ramify?.actor;
  if (!actor) throw new RamifyError('UNAUTHORIZED', 'missing API key: send Authorization: Bearer rmf_...');
  return actor;
}
