/**
 * Per-request state shared by the hooks: who called (API key id), what the audit entry should say, and
 * the error code the error handler produced.
 */
export interface RequestContext {
  apiKeyId: string | null;
  /** Set by handlers whose sandbox is not in the path (create, fork). */
  sandboxId: string | null;
  errorCode: string | null;
  /** The MCP tool the call is made for (header `x-ramify-mcp-tool`, see mcp-tool.ts); null otherwise. */
  tool: string | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    ramify: RequestContext;
  }
}

export function freshRequestContext(): RequestContext {
  return { apiKeyId: null, sandboxId: null, errorCode: null, tool: null };
}
