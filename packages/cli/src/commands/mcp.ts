/** `ramify mcp`: serve Ramify's MCP tools on stdio (the process an MCP client such as Claude Code starts). */
import type { Command } from 'commander';
import { resolveConnection } from '@ramify/sdk';
import { action, type CliEnv } from '../context.js';

/** `@ramify/mcp` loads the MCP SDK, ajv and every tool's zod schema: loaded only for `ramify mcp` (see {@link loadMcpTools}). */
let mcp: typeof import('@ramify/mcp') | undefined;

/**
 * Load `@ramify/mcp`, whose tool list `ramify mcp --help` prints. Commander renders help synchronously
 * (and `ramify help mcp` runs no hook), so `loadDefinitionsFor` (program.ts) calls this before parsing.
 */
export async function loadMcpTools(): Promise<typeof import('@ramify/mcp')> {
  mcp ??= await import('@ramify/mcp');
  return mcp;
}

/** Register `mcp` on `program`. */
export function registerMcp(program: Command, env: CliEnv): void {
  program.command('mcp')
    .description('serve Ramify as MCP tools on stdio (JSON-RPC on stdin/stdout) for Claude Code, Claude Desktop, Cursor, ...')
    .addHelpText('after', () => `
It talks to the daemon at --api-url (env RAMIFY_API_URL, default http://127.0.0.1:7423) with --api-key
(env RAMIFY_API_KEY, else $RAMIFY_HOME/api-key or /var/lib/ramify/api-key). stdout carries only MCP
messages; one note goes to stderr. It ends when the client closes stdin. The daemon also serves the same
tools over Streamable HTTP at <api-url>/mcp (Authorization: Bearer <key>).

Claude Code:     claude mcp add --env RAMIFY_API_KEY=rmf_... ramify -- ramify mcp
  or over HTTP:  claude mcp add --transport http ramify http://127.0.0.1:7423/mcp --header "Authorization: Bearer rmf_..."
Claude Desktop (claude_desktop_config.json), Cursor (.cursor/mcp.json):
  { "mcpServers": { "ramify": { "command": "ramify", "args": ["mcp"],
      "env": { "RAMIFY_API_URL": "http://127.0.0.1:7423", "RAMIFY_API_KEY": "rmf_..." } } } }
An HTTP client (Claude Code's .mcp.json; Cursor takes the same without "type"):
  { "mcpServers": { "ramify": { "type": "http", "url": "http://127.0.0.1:7423/mcp",
      "headers": { "Authorization": "Bearer rmf_..." } } } }
Check it without an agent (from the Ramify clone, as root; the version the tests pin):
  npx @modelcontextprotocol/inspector@2.12.0 --cli -e RAMIFY_API_KEY=$(cat /var/lib/ramify/api-key) \
    --method tools/list -- ramify mcp

Tools: ${toolNames()}.
Resources: ramify://sandboxes, ramify://sandboxes/{id}, ramify://templates.`)
    .action(action(env, async (ctx) => {
      const { serveStdio, RAMIFY_TOOLS } = await loadMcpTools();
      const conn = resolveConnection(ctx.connection);
      ctx.note(`ramify mcp: serving ${RAMIFY_TOOLS.length} tools on stdio for ${conn.apiUrl}${conn.hasApiKey ? '' : ' (no API key configured: set RAMIFY_API_KEY)'}`);
      await serveStdio({ connection: ctx.connection, stdin: env.stdin, stdout: env.stdout });
    }));
}

/** The tools' names for `--help`. @throws Error when {@link loadMcpTools} has not run (a bug of the caller). */
function toolNames(): string {
  if (!mcp) throw new Error('ramify mcp --help: the tool list was not loaded (call loadDefinitionsFor first)');
  return mcp.RAMIFY_TOOLS.map((t) => t.name).join(', ');
}
