/**
 * The Streamable HTTP transport, stateless: each POST carries one JSON-RPC message (or batch) and gets
 * its answer as JSON; a fresh server handles it with the caller's connection (the daemon passes the
 * request's own bearer key, so every tool call acts as, and is audited under, the key that sent it).
 * No sessions, so no GET stream: the daemon answers GET and DELETE with 405 (see {@link methodNotAllowed}).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createRamifyMcpServer, type RamifyMcpOptions } from './server.js';

/**
 * Answer one MCP POST on `res`. `body` is the parsed JSON when the caller parsed it (else the transport
 * reads `req`). Resolves once the response is handed over; the server is closed when `res` closes.
 */
export async function handleMcpPost(req: IncomingMessage, res: ServerResponse, body: unknown, options: RamifyMcpOptions): Promise<void> {
  const server = createRamifyMcpServer(options);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.once('close', () => { void server.close(); });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

/** The JSON-RPC error body of a GET or DELETE on the stateless endpoint (HTTP 405, `Allow: POST`). */
export function methodNotAllowed(): { jsonrpc: '2.0'; error: { code: number; message: string }; id: null } {
  return { jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this MCP endpoint is stateless; POST JSON-RPC messages to it' }, id: null };
}
