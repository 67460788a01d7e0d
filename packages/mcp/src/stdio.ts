/** The stdio transport: what `ramify mcp` runs. JSON-RPC on stdin/stdout; nothing else may write to stdout. */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createRamifyMcpServer, type RamifyMcpOptions } from './server.js';

/** Options of {@link serveStdio}. */
export interface StdioOptions extends RamifyMcpOptions {
  stdin?: NodeJS.ReadableStream;
  stdout?: NodeJS.WritableStream;
}

/**
 * Serve MCP on stdio until stdin ends (the client went away) or the transport closes. Resolves then;
 * tool failures never end it (they are tool errors).
 */
export async function serveStdio(options: StdioOptions = {}): Promise<void> {
  const stdin = options.stdin ?? process.stdin;
  const server = createRamifyMcpServer(options);
  const transport = new StdioServerTransport(stdin as typeof process.stdin, (options.stdout ?? process.stdout) as typeof process.stdout);
  const closed = new Promise<void>((resolve) => { server.server.onclose = resolve; });
  stdin.once('end', () => { void server.close(); });
  await server.connect(transport);
  await closed;
}
