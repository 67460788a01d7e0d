/**
 * MCP resources: `ramify://sandboxes` (the sandboxes, JSON), `ramify://sandboxes/{id}` (one sandbox's
 * info; the template lists every sandbox) and `ramify://templates` (the templates sandbox_create can
 * start from). Reads go through `@ramify/sdk` tagged `resources_read` for the audit log; a failure is a
 * JSON-RPC error whose message carries Ramify's code and a hint.
 */
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError, type ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import { listTemplates, Sandbox, type ConnectionOpts } from '@ramify/sdk';
import { hintFor } from './hints.js';
import { asRamifyError } from './results.js';
import { tagged } from './tools/register.js';
import { sandboxLine } from './tools/format.js';

/** Audit tag of resource reads. */
export const RESOURCE_TAG = 'resources_read';
/** Resource error code for a missing sandbox or template (MCP's "resource not found"). */
const RESOURCE_NOT_FOUND = -32002;
const JSON_TYPE = 'application/json';
/** Most sandboxes a resource lists. */
const MAX_LISTED = 1000;

const json = (uri: URL, value: unknown): ReadResourceResult => ({ contents: [{ uri: uri.href, mimeType: JSON_TYPE, text: JSON.stringify(value, null, 2) }] });

/** Run a read, turning a Ramify error into an McpError with its code and hint. */
async function reading(fn: () => Promise<ReadResourceResult>): Promise<ReadResourceResult> {
  try {
    return await fn();
  } catch (err) {
    const e = asRamifyError(err);
    throw new McpError(e.code.endsWith('_NOT_FOUND') ? RESOURCE_NOT_FOUND : ErrorCode.InternalError, `${e.code}: ${e.message}; next: ${hintFor(e).hint}`, { code: e.code });
  }
}

/** Register the resources on `server`, reading through `connection`. */
export function registerResources(server: McpServer, connection: ConnectionOpts): void {
  const conn = tagged(connection, RESOURCE_TAG);
  const sandboxes = async () => Sandbox.list({ ...conn, limit: MAX_LISTED }).nextItems();
  server.registerResource('sandboxes', 'ramify://sandboxes', { title: 'Sandboxes', description: 'Every sandbox that is not killed (state, runtime, size, deadline, metadata), as JSON', mimeType: JSON_TYPE },
    (uri) => reading(async () => json(uri, { sandboxes: await sandboxes() })));
  server.registerResource('sandbox',
    new ResourceTemplate('ramify://sandboxes/{id}', {
      list: async () => ({ resources: (await sandboxes()).map((s) => ({ uri: `ramify://sandboxes/${s.id}`, name: s.id, description: sandboxLine(s), mimeType: JSON_TYPE })) }),
    }),
    { title: 'Sandbox', description: "One sandbox's info (state, runtime, CPU, memory, deadline, ports, metadata), as JSON", mimeType: JSON_TYPE },
    (uri, vars) => reading(async () => json(uri, await Sandbox.getInfo(String(vars.id), conn))));
  server.registerResource('templates', 'ramify://templates', { title: 'Templates', description: 'The templates sandbox_create can start from (name, runtime images, envs), as JSON', mimeType: JSON_TYPE },
    (uri) => reading(async () => json(uri, { templates: await listTemplates(conn) })));
}
