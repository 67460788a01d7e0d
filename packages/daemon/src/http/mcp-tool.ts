/**
 * The MCP tool an API call is made for: `@ramify/mcp` names it in the `x-ramify-mcp-tool` header on
 * every call of a tool, and the audit log records it (`AuditEntry.tool`), reads included. A value that
 * is not a tool name is a 400 `VALIDATION_FAILED`, not silently dropped.
 */
import { MCP_TOOL_HEADER, MCP_TOOL_NAME, invalidField, quote } from '@ramify/contracts';
import type { FastifyRequest } from 'fastify';

/** The onRequest hook (after auth: a refused key is 401 whatever the header says). */
export function mcpToolHook(): (request: FastifyRequest) => Promise<void> {
  return async (request) => {
    const value = request.headers[MCP_TOOL_HEADER];
    if (value === undefined) return;
    if (typeof value !== 'string' || !MCP_TOOL_NAME.test(value)) {
      const got = typeof value === 'string' ? quote(value) : `${value.length} values`;
      throw invalidField(`headers.${MCP_TOOL_HEADER}`, `must be one MCP tool name (${MCP_TOOL_NAME.source}), got ${got}`, { field: MCP_TOOL_HEADER });
    }
    request.ramify.tool = value;
  };
}
