/**
 * TEST SUPPORT: the Ramify MCP server wired to the official MCP `Client` in-process (the SDK's
 * InMemoryTransport), over the SDK's protocol fixture. For protocol tests of the tools (schemas,
 * arguments, results, errors, headers), not of a runtime.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startContractServer, type ContractServer, type ContractServerOptions } from '@ramify/sdk/testing';
import { createRamifyMcpServer } from './server.js';

/** A fixture daemon and a connected MCP client. */
export interface McpTestBed {
  fixture: ContractServer;
  client: Client;
  /** `tools/call` (never rejects for a tool error: those come back with `isError`). */
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  close(): Promise<void>;
}

/** Start a fixture (with `options`) and connect a client to a server pointed at it. */
export async function mcpTestBed(options: ContractServerOptions = {}): Promise<McpTestBed> {
  const fixture = await startContractServer(options);
  const server = createRamifyMcpServer({ connection: { apiUrl: fixture.url, apiKey: fixture.apiKey } });
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'ramify-mcp-test', version: '1' });
  await client.connect(clientSide);
  return {
    fixture,
    client,
    call: async (name, args = {}) => (await client.callTool({ name, arguments: args })) as CallToolResult,
    close: async () => {
      await client.close();
      await fixture.close();
    },
  };
}

/** The text of a result's first content block. */
export const textOf = (r: CallToolResult): string => (r.content[0] as { text: string }).text;
