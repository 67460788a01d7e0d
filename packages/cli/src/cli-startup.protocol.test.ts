/**
 * What `ramify` loads when it starts: the heavy modules (zod and the schemas of `@ramify/contracts`, the
 * MCP SDK, `ws`, the sync engine's tar-stream and chokidar) only for the commands that use them, so that
 * every other command starts in a fraction of the time (bench/cli/startup.mjs measures it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { useCliFixture } from './test-support/cli-fixture.js';

const cli = useCliFixture('startup');
const RECORDER = fileURLToPath(new URL('./test-support/import-recorder.js', import.meta.url));

/** Heavy packages by the path their modules load from. */
const HEAVY = {
  zod: '/node_modules/zod/',
  'contracts schemas': '/packages/contracts/dist/api.js',
  'MCP SDK': '/node_modules/@modelcontextprotocol/',
  '@ramify/mcp': '/packages/mcp/dist/',
  ws: '/node_modules/ws/',
  'tar-stream': '/node_modules/tar-stream/',
  chokidar: '/node_modules/chokidar/',
} as const;

/** Run `ramify args` and return which of {@link HEAVY} it loaded, and its exit code. */
async function heavyLoaded(args: string[], name: string): Promise<{ code: number | null; loaded: string[] }> {
  const log = join(cli.dir, `imports-${name}.log`);
  const run = await cli.ramify(args, { env: { NODE_OPTIONS: `--import=${RECORDER}`, RAMIFY_IMPORT_LOG: log } });
  const urls = (await readFile(log, 'utf8')).split('\n');
  return { code: run.code, loaded: Object.entries(HEAVY).filter(([, path]) => urls.some((u) => u.includes(path))).map(([k]) => k) };
}

test('--help, sandbox list and sandbox exec load none of the heavy modules they do not use', async () => {
  assert.deepEqual(await heavyLoaded(['--help'], 'help'), { code: 0, loaded: [] });
  assert.deepEqual(await heavyLoaded(['sandbox', 'list', '--json'], 'list'), { code: 0, loaded: [] });
  const id = await cli.newSandbox();
  // exec streams over a WebSocket: ws, and nothing else.
  assert.deepEqual(await heavyLoaded(['sandbox', 'exec', id, '--', 'echo hi'], 'exec'), { code: 0, loaded: ['ws'] });
});

test('mcp --help and help mcp load @ramify/mcp for the tool list; serve --help does not', async () => {
  const mcp = await heavyLoaded(['mcp', '--help'], 'mcp-help');
  assert.equal(mcp.code, 0);
  assert.ok(mcp.loaded.includes('@ramify/mcp') && mcp.loaded.includes('MCP SDK'), mcp.loaded.join(', '));
  const helpMcp = await heavyLoaded(['help', 'mcp'], 'help-mcp');
  assert.ok(helpMcp.loaded.includes('@ramify/mcp'), helpMcp.loaded.join(', '));
  const serve = await heavyLoaded(['serve', '--help'], 'serve-help');
  assert.equal(serve.code, 0);
  assert.ok(!serve.loaded.includes('MCP SDK'), serve.loaded.join(', '));
});
