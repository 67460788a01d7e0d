/**
 * The Ramify MCP server: an `McpServer` of the official SDK with every tool (tools/index.ts) and the
 * resources, talking to a daemon through `@ramify/sdk` on the given connection. Transports: stdio.ts
 * (`ramify mcp`) and http.ts (the daemon's `/mcp`).
 */
import { createRequire } from 'node:module';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ConnectionOpts } from '@ramify/sdk';
import { registerResources } from './resources.js';
import { RAMIFY_TOOLS } from './tools/index.js';
import { registerTools } from './tools/register.js';
import type { Tool } from './tools/tool.js';

/** This package's version (the server's `serverInfo.version`). */
export const MCP_SERVER_VERSION: string = (createRequire(import.meta.url)('../package.json') as { version: string }).version;

/** What the server tells a model about itself at `initialize`. */
export const INSTRUCTIONS = [
  'Ramify runs code in isolated Linux sandboxes (Debian with python3 and bash) that can pause, resume and fork.',
  'Start with sandbox_create (returns sandboxId), then command_run for shell commands and files_read/files_write for files.',
  'Long jobs and servers: command_start, then command_output. To try several approaches at once from the same state, use sandbox_explore (or sandbox_fork).',
  'Kill sandboxes you no longer need with sandbox_kill. Errors carry a code and a "next:" hint saying what to do.',
].join(' ');

/** Options of {@link createRamifyMcpServer}. */
export interface RamifyMcpOptions {
  /** The daemon and key (default: the SDK's resolution: env `RAMIFY_API_URL`, `RAMIFY_API_KEY`, the key file). */
  connection?: ConnectionOpts;
  /** Tools to offer; default {@link RAMIFY_TOOLS}. */
  tools?: readonly Tool[];
}

/** A new, unconnected server (`server.connect(transport)` starts it). */
export function createRamifyMcpServer(options: RamifyMcpOptions = {}): McpServer {
  const connection = options.connection ?? {};
  const server = new McpServer({ name: 'ramify', title: 'Ramify', version: MCP_SERVER_VERSION }, { instructions: INSTRUCTIONS });
  registerTools(server, options.tools ?? RAMIFY_TOOLS, connection);
  registerResources(server, connection);
  return server;
}
