/**
 * Protocol tests of `ramify mcp`: the official MCP client spawns the built CLI over stdio
 * (StdioClientTransport) against the contract fixture; flags and env reach the SDK connection, stdout
 * carries nothing but MCP, the process ends when the client goes.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { useCliFixture } from './test-support/cli-fixture.js';

const cli = useCliFixture('mcp');
const MAIN = fileURLToPath(new URL('./main.js', import.meta.url));

async function connect(args: string[], env: Record<string, string>): Promise<{ client: Client; transport: StdioClientTransport }> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [MAIN, ...args, 'mcp'], env: { PATH: process.env.PATH ?? '', ...env }, stderr: 'pipe' });
  const client = new Client({ name: 'cli-mcp-test', version: '1' });
  await client.connect(transport);
  return { client, transport };
}

describe('ramify mcp (stdio) against the protocol fixture', () => {
  test('the API URL and key come from the flags, and a tool call works', async () => {
    const { client } = await connect(['--api-url', cli.server.url, '--api-key', cli.server.apiKey], { RAMIFY_HOME: cli.dir });
    assert.equal(client.getServerVersion()?.name, 'ramify');
    const created = await client.callTool({ name: 'sandbox_create', arguments: {} });
    const sandboxId = (created.structuredContent as { sandboxId: string }).sandboxId;
    const run = await client.callTool({ name: 'command_run', arguments: { sandboxId, command: 'echo via-stdio' } });
    assert.equal((run.structuredContent as { stdout: string }).stdout, 'via-stdio\n');
    await client.close();
  });

  test('from the environment too; a wrong key is a tool error saying what to set, not a dead server', async () => {
    const { client } = await connect([], { RAMIFY_API_URL: cli.server.url, RAMIFY_API_KEY: 'rmf_wrong', RAMIFY_HOME: cli.dir });
    const r = await client.callTool({ name: 'sandbox_list', arguments: {} });
    assert.equal(r.isError, true);
    assert.match((r.content as { text: string }[])[0]!.text, /^UNAUTHORIZED: .*\nnext: .*RAMIFY_API_KEY/s);
    assert.equal((await client.listTools()).tools.length > 20, true, 'still serving');
    await client.close();
  });

  test('--help shows ready-to-paste configuration and the tool list', async () => {
    const r = await cli.ramify(['mcp', '--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /"mcpServers": \{ "ramify": \{ "command": "ramify", "args": \["mcp"\]/);
    assert.match(r.stdout, /claude mcp add --transport http ramify http:\/\/127\.0\.0\.1:7423\/mcp/);
    assert.match(r.stdout, /Tools: sandbox_create, .*command_run.*sandbox_explore/s);
  });
});
