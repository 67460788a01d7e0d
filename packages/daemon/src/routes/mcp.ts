/**
 * `/mcp`: Ramify's MCP tools over Streamable HTTP (stateless), behind the API's bearer auth (a missing
 * or wrong key is 401 before any MCP message is read). Each POST is handed to `@ramify/mcp` with a
 * connection to this very API (the address the request came in on) and the caller's own key, so the
 * tools act as that key and every API call they make is audited under it with the tool's name.
 * GET and DELETE (a session's stream and end) are 405: there are no sessions.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ROUTES } from '@ramify/contracts';
import { handleMcpPost, methodNotAllowed } from '@ramify/mcp';
import type { ExtraOperation } from '../http/openapi.js';
import type { RouteConfig } from '../http/route.js';
import { bearerToken } from '../http/auth.js';
import { scopeOf } from '../http/scope.js';

/** Path of the MCP endpoint. */
export const MCP_PATH = ROUTES.mcp.path;
/**
 * Largest MCP request, bytes: one `files_write` of up to 8 MiB characters (its limit) in JSON, with room
 * for escaping. Other API routes keep the 1 MiB JSON limit.
 */
export const MCP_BODY_LIMIT = 24 << 20;

export const mcpDocs: ExtraOperation[] = [{
  operation: 'mcp', summary: 'MCP (Streamable HTTP, stateless): Ramify as tools for agents',
  description: 'JSON-RPC 2.0 messages of the Model Context Protocol (initialize, tools/list, tools/call, resources/list, resources/read); answers as application/json. Send Accept: application/json, text/event-stream. No sessions: GET and DELETE are 405. The tools and resources are those of `ramify mcp` (see README, "MCP"). Bearer auth as every route; each tool call acts as, and is audited under, the calling key.',
  responses: { '200': { description: 'JSON-RPC response' }, '202': { description: 'notification accepted' }, '401': { description: 'missing or wrong API key' } },
}];

/** The API's own base URL as seen from this request's socket (loopback or the address it listens on). */
function selfUrl(request: FastifyRequest): string {
  const { localAddress, localPort } = request.socket;
  const host = localAddress?.includes(':') ? `[${localAddress}]` : localAddress ?? '127.0.0.1';
  return `http://${host}:${localPort}`;
}

/** Register `/mcp` (POST; GET and DELETE answer 405). */
export function mountMcp(app: FastifyInstance): void {
  // The tools call this API with the caller's key: each call is scoped to its team there.
  const config: RouteConfig = { auth: true, scope: scopeOf(MCP_PATH, true) };
  app.post(MCP_PATH, { config, bodyLimit: MCP_BODY_LIMIT }, async (request, reply) => {
    const apiKey = bearerToken(request) ?? '';
    const json = /^application\/json\b/i.test(request.headers['content-type'] ?? '');
    reply.hijack();
    try {
      await handleMcpPost(request.raw, reply.raw, json ? request.body : undefined, { connection: { apiUrl: selfUrl(request), apiKey } });
    } catch (err) {
      request.log.error({ err }, 'mcp request failed');
      if (!reply.raw.headersSent) reply.raw.writeHead(500, { 'content-type': 'application/json' });
      reply.raw.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'internal error' }, id: null }));
    }
  });
  for (const method of ['GET', 'DELETE'] as const) {
    app.route({ method, url: MCP_PATH, config, handler: async (_request, reply) => reply.code(405).header('allow', 'POST').send(methodNotAllowed()) });
  }
}
