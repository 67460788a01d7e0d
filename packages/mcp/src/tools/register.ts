/**
 * Putting tools on an `McpServer`: the schema, description and annotations of each (what `tools/list`
 * shows), and the `tools/call` handler: it checks the arguments against the tool's strict zod schema
 * itself, so a bad argument is a tool error like any other (`VALIDATION_FAILED` naming the field, with a
 * hint), then runs the tool on a connection tagged with its name (the `x-ramify-mcp-tool` header: the
 * daemon's audit log records every API call of a tool call with the key and the tool) and returns its
 * output as text plus `structuredContent`, or any throw as a tool error (results.ts).
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import { MCP_TOOL_HEADER, plainErrorMap, plainIssues } from '@ramify/contracts';
import { RamifyError, Sandbox, type ConnectionOpts } from '@ramify/sdk';
import { toolError, toolResult } from '../results.js';
import type { Tool, ToolContext } from './tool.js';

/** `connection` with the header naming `tool` added. */
export function tagged(connection: ConnectionOpts, tool: string): ConnectionOpts {
  return { ...connection, headers: { ...connection.headers, [MCP_TOOL_HEADER]: tool } };
}

/** The context a call of `tool` runs in. */
export function toolContext(connection: ConnectionOpts, tool: string): ToolContext {
  const conn = tagged(connection, tool);
  return { connection: conn, sandbox: (id) => Sandbox.fromId(id, conn) };
}

/**
 * The daemon's plain error map (contracts/src/issue-messages.ts), but an unknown argument names the tool's
 * arguments: `unknown argument 'sandbox_id' (command_run takes: sandboxId, command, ...)`.
 */
function argumentErrorMap(tool: Tool, args: unknown): z.core.$ZodErrorMap {
  const plain = plainErrorMap(args, tool.input);
  return (iss) => {
    if (iss.code !== 'unrecognized_keys') return plain(iss);
    const known = Object.keys(tool.input.shape).join(', ');
    return `unknown argument${iss.keys.length > 1 ? 's' : ''} ${iss.keys.map((k) => `'${k}'`).join(', ')} (${tool.name} takes: ${known})`;
  };
}

/** The argument a zod issue names (an unknown one names itself), as the message and `details.field` say it. */
function fieldOf(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return [...issue.path, issue.keys[0]].join('.');
  return issue.path.map(String).join('.') || '(arguments)';
}

/**
 * The arguments of a call of `tool`, parsed.
 * @throws RamifyError `VALIDATION_FAILED` naming the first bad argument (`details.field`) and, as the REST
 *   API's 400s do, every bad field in `details.issues`: `{ path, message }[]`, the path under `arguments`
 *   (`arguments.timeoutMs`; an unknown argument: the object holding it, `arguments`).
 */
export function parseArguments(tool: Tool, args: unknown): z.output<Tool['input']> {
  // The daemon's plain words (contracts/src/issue-messages.ts): `timeoutMs: must be an integer from 1 to 86400000, got the string 'soon'`.
  const parsed = tool.input.safeParse(args ?? {}, { error: argumentErrorMap(tool, args ?? {}) });
  if (parsed.success) return parsed.data;
  // One per field: 2^53 for an .int().max(n) is two zod issues with the same words.
  const fields = new Map<string, string>();
  for (const issue of parsed.error.issues) if (!fields.has(fieldOf(issue))) fields.set(fieldOf(issue), issue.message);
  const listed = [...fields].map(([field, message]) => `${field}: ${message}`).join('; ');
  throw new RamifyError('VALIDATION_FAILED', `invalid arguments for ${tool.name}: ${listed}`, { field: fields.keys().next().value, issues: plainIssues(parsed.error.issues, 'arguments') });
}

/** Run `tool` with raw `args`: the result, or a tool error for bad arguments and any failure. Never throws. */
export async function callTool(tool: Tool, args: unknown, connection: ConnectionOpts): Promise<CallToolResult> {
  try {
    return toolResult(await tool.run(parseArguments(tool, args), toolContext(connection, tool.name)));
  } catch (err) {
    return toolError(err);
  }
}

/** Register `tools` on `server`, each calling the daemon on `connection`. @throws Error on a duplicate name. */
export function registerTools(server: McpServer, tools: readonly Tool[], connection: ConnectionOpts): void {
  const byName = new Map<string, Tool>();
  for (const tool of tools) {
    byName.set(tool.name, tool);
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: tool.input, annotations: { title: tool.title, ...tool.hints } },
      (args: unknown) => callTool(tool, args, connection),
    );
  }
  // The SDK's own handler would answer a bad argument with its text alone; ours validates first and
  // answers as every other tool error does. tools/list stays the SDK's (schemas and annotations above).
  server.server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = byName.get(request.params.name);
    if (!tool) return toolError(new RamifyError('BAD_REQUEST', `no tool '${request.params.name}' (tools/list names them: ${[...byName.keys()].join(', ')})`, { field: 'name' }));
    return callTool(tool, request.params.arguments, connection);
  });
}
