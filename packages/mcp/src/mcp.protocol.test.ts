/**
 * Protocol tests: the MCP server's tools through the official MCP `Client` (in-process transport) over
 * the SDK's protocol fixture. They check schemas, annotations, argument checks, results, tool errors,
 * output cutting and the audit header; they do not cover a runtime (real-mcp.test.ts in the daemon does).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MCP_TOOL_HEADER } from '@ramify/contracts';
import { RAMIFY_TOOLS } from './tools/index.js';
import { FULL_OUTPUT_DIR } from './tools/commands.js';
import { mcpTestBed, textOf, type McpTestBed } from './test-client.js';

type Schema = { type: string; properties: Record<string, { type?: string; default?: unknown }>; required?: string[]; additionalProperties?: boolean };

let bed: McpTestBed;
before(async () => {
  bed = await mcpTestBed({
    scripts: (cmd) => {
      if (cmd === 'big') return async (ctx) => { ctx.stdout(`HEAD${'x'.repeat(50_000)}TAIL`); ctx.stderr('warn\n'); return 3; };
      if (cmd === 'serve') return async (ctx) => { ctx.stdout('up\n'); return { signal: await ctx.killed }; };
      return undefined;
    },
  });
});
after(async () => { await bed.close(); });

async function newSandbox(): Promise<string> {
  const r = await bed.call('sandbox_create');
  assert.equal(r.isError, undefined, textOf(r));
  return (r.structuredContent as { sandboxId: string }).sandboxId;
}

describe('protocol: tools/list', () => {
  test('every tool: one-line description, all four annotations, a strict object schema; sandbox tools take sandboxId', async () => {
    const { tools } = await bed.client.listTools();
    assert.deepEqual(tools.map((t) => t.name), RAMIFY_TOOLS.map((t) => t.name));
    assert.equal(new Set(tools.map((t) => t.name)).size, tools.length);
    for (const t of tools) {
      assert.ok(t.description && !t.description.includes('\n') && t.description.length < 220, `${t.name}: ${t.description}`);
      for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const) assert.equal(typeof t.annotations?.[hint], 'boolean', `${t.name}.${hint}`);
      const schema = t.inputSchema as Schema;
      assert.equal(schema.type, 'object');
      assert.equal(schema.additionalProperties, false, t.name);
      const scoped = !['sandbox_create', 'sandbox_list', 'snapshot_list', 'network_create', 'network_list', 'network_delete'].includes(t.name);
      assert.equal(schema.required?.includes('sandboxId') ?? false, scoped, t.name);
      if (scoped) assert.equal(schema.properties.sandboxId?.type, 'string');
    }
    const byName = new Map(tools.map((t) => [t.name, t]));
    const create = byName.get('sandbox_create')!.inputSchema as Schema;
    assert.equal(create.properties.template?.default, 'base');
    const run = byName.get('command_run')!.inputSchema as Schema;
    assert.deepEqual(run.required, ['sandboxId', 'command']);
    for (const p of ['timeoutMs', 'cwd', 'envs']) assert.ok(p in run.properties, p);
    assert.deepEqual(byName.get('sandbox_fork')!.inputSchema.required, ['sandboxId', 'count']);
    assert.equal(byName.get('sandbox_list')!.annotations?.readOnlyHint, true);
    assert.equal(byName.get('sandbox_kill')!.annotations?.destructiveHint, true);
    assert.equal(byName.get('sandbox_kill')!.annotations?.idempotentHint, true);
    assert.equal(byName.get('command_run')!.annotations?.readOnlyHint, false);
  });
});

describe('protocol: tool calls', () => {
  test('create, run, and every API call of a tool carries its name (HTTP and the WebSocket stream)', async () => {
    const start = bed.fixture.requests.length;
    const id = await newSandbox();
    const r = await bed.call('command_run', { sandboxId: id, command: 'echo 42' });
    assert.equal(r.isError, undefined, textOf(r));
    assert.equal((r.structuredContent as { stdout: string }).stdout, '42\n');
    assert.equal((r.structuredContent as { exitCode: number }).exitCode, 0);
    const seen = bed.fixture.requests.slice(start).map((q) => [q.method, q.ws, q.headers[MCP_TOOL_HEADER]]);
    assert.deepEqual(seen, [['POST', false, 'sandbox_create'], ['GET', false, 'sandbox_create'], ['GET', true, 'command_run']]);
  });

  test('a bad argument is a tool error naming the field (a missing one, a wrong type, an unknown one)', async () => {
    const missing = await bed.call('command_run', { command: 'echo 1' });
    assert.equal(missing.isError, true);
    assert.equal((missing.structuredContent as { error: { code: string; details: { field: string } } }).error.code, 'VALIDATION_FAILED');
    assert.equal((missing.structuredContent as { error: { details: { field: string } } }).error.details.field, 'sandboxId');
    const wrongType = await bed.call('sandbox_set_timeout', { sandboxId: 'sbx_x', timeoutMs: 'soon' });
    assert.match(textOf(wrongType), /^VALIDATION_FAILED: invalid arguments for sandbox_set_timeout: timeoutMs: must be an integer from 1 to 86400000, got the string 'soon'\n/);
    const huge = await bed.call('sandbox_set_timeout', { sandboxId: 'sbx_x', timeoutMs: 2 ** 53 });
    assert.deepEqual((huge.structuredContent as { error: { details: { issues: unknown[] } } }).error.details.issues, [{ path: 'arguments.timeoutMs', message: 'must be an integer from 1 to 86400000, got 9007199254740992' }], 'one issue per field, as the REST API lays it out');
    const unknown = await bed.call('command_run', { sandbox_id: 'sbx_x', sandboxId: 'sbx_x', command: 'echo 1' });
    assert.match(textOf(unknown), /unknown argument 'sandbox_id' \(command_run takes: sandboxId, command/);
    const { details } = (unknown.structuredContent as { error: { details: { field: string; issues: Array<{ path: string; message: string }> } } }).error;
    assert.equal(details.field, 'sandbox_id');
    assert.deepEqual(details.issues.map((i) => i.path), ['arguments'], 'an unknown argument: the object holding it, as the REST API names an unknown field');
    assert.match(details.issues[0]!.message, /^unknown argument 'sandbox_id' \(command_run takes: sandboxId, command/);
    const noTool = await bed.call('sandbox_teleport', {});
    assert.equal(noTool.isError, true);
    assert.match(textOf(noTool), /^BAD_REQUEST: no tool 'sandbox_teleport'/);
  });

  test("the daemon's errors are tool errors with the code and a hint; the server keeps serving", async () => {
    const r = await bed.call('sandbox_get', { sandboxId: 'sbx_gone' });
    assert.equal(r.isError, true);
    const error = (r.structuredContent as { error: { code: string; hint: string } }).error;
    assert.equal(error.code, 'SANDBOX_NOT_FOUND');
    assert.match(error.hint, /sandbox_list/);
    assert.match(textOf(r), /\nnext: /);
    assert.equal((await bed.call('sandbox_list')).isError, undefined);
  });

  test('long output is cut head and tail with a marker, the whole saved in the sandbox and readable with files_read', async () => {
    const id = await newSandbox();
    const r = await bed.call('command_run', { sandboxId: id, command: 'big', maxOutputBytes: 1000 });
    const data = r.structuredContent as { pid: number; exitCode: number; stdout: string; stderr: string; truncated: { stdout: boolean }; fullOutput: { stdout: string }; stdoutBytes: number };
    assert.equal(r.isError, undefined, 'a non-zero exit is a result, not a tool error');
    assert.equal(data.exitCode, 3);
    assert.equal(data.stderr, 'warn\n');
    assert.equal(data.truncated.stdout, true);
    assert.equal(data.stdoutBytes, 50_008);
    assert.ok(data.stdout.startsWith('HEAD') && data.stdout.endsWith('TAIL'));
    assert.match(data.stdout, /\[ramify: 49008 of 50008 bytes cut here \(bytes 400-49408\); the whole stdout is in the sandbox at \/tmp\/ramify-mcp\/\d+\.stdout/);
    assert.equal(data.fullOutput.stdout, `${FULL_OUTPUT_DIR}/${data.pid}.stdout`);
    assert.match(textOf(r), /^exit code 3 \(pid \d+\)/);
    const read = await bed.call('files_read', { sandboxId: id, path: data.fullOutput.stdout, offset: 49_990 });
    assert.deepEqual(read.structuredContent, { path: data.fullOutput.stdout, size: 50_008, offset: 49_990, bytesRead: 18, nextOffset: 50_008, truncated: false, encoding: 'text', content: 'xxxxxxxxxxxxxxTAIL' });
  });

  test('files round-trip bytes exactly as base64; a text read of binary is NOT_UTF8; maxBytes pages', async () => {
    const id = await newSandbox();
    const bytes = Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80, 10, 13]);
    const w = await bed.call('files_write', { sandboxId: id, path: '/work/b.bin', content: bytes.toString('base64'), encoding: 'base64' });
    assert.equal((w.structuredContent as { size: number }).size, bytes.byteLength);
    const r = await bed.call('files_read', { sandboxId: id, path: '/work/b.bin' });
    const data = r.structuredContent as { encoding: string; content: string };
    assert.equal(data.encoding, 'base64');
    assert.deepEqual(Buffer.from(data.content, 'base64'), bytes);
    const asText = await bed.call('files_read', { sandboxId: id, path: '/work/b.bin', encoding: 'text' });
    assert.match(textOf(asText), /^NOT_UTF8: .*\nnext: .*base64/);
    await bed.call('files_write', { sandboxId: id, path: '/work/t.txt', content: 'héllo wörld' });
    const page = await bed.call('files_read', { sandboxId: id, path: '/work/t.txt', maxBytes: 2 });
    assert.deepEqual(page.structuredContent, { path: '/work/t.txt', size: 13, offset: 0, bytesRead: 1, nextOffset: 1, truncated: true, encoding: 'text', content: 'h' });
    const bad = await bed.call('files_write', { sandboxId: id, path: '/work/x', content: 'not base64!', encoding: 'base64' });
    assert.deepEqual((bad.structuredContent as { error: { details: unknown } }).error.details, {
      field: 'content', issues: [{ path: 'arguments.content', message: 'content is not valid base64 (A-Z a-z 0-9 + /, = padding, length a multiple of 4)' }],
    });
  });

  test('sandbox_fork without confirm forks nothing and says what it would cost', async () => {
    const id = await newSandbox();
    const forksBefore = bed.fixture.requests.filter((q) => q.path.endsWith('/fork')).length;
    for (const args of [{ confirm: false }, {}]) {
      const r = await bed.call('sandbox_fork', { sandboxId: id, count: 2, ...args });
      assert.notEqual(r.isError, true, 'a dry run, not an error');
      assert.match(textOf(r), /would start 2 new sandboxes of 512 MB each \(1024 MB in all\); nothing was started: call again with confirm: true/);
      assert.deepEqual(r.structuredContent, { sandboxId: id, confirmed: false, wouldStart: 2, memoryMBEach: 512, memoryMBTotal: 1024 });
    }
    assert.equal(bed.fixture.requests.filter((q) => q.path.endsWith('/fork')).length, forksBefore);
    const ok = await bed.call('sandbox_fork', { sandboxId: id, count: 2, confirm: true });
    assert.equal((ok.structuredContent as { forks: string[] }).forks.length, 2);
  });

  test('egress_set with no rules and no mode is refused, naming mode; nothing is changed', async () => {
    const id = await newSandbox();
    const before = bed.fixture.requests.filter((q) => q.path.endsWith('/egress')).length;
    for (const args of [{}, { rules: [] }]) {
      const r = await bed.call('egress_set', { sandboxId: id, ...args });
      assert.equal(r.isError, true);
      assert.match(textOf(r), /^VALIDATION_FAILED: no rules and no mode: say mode: 'deny-all'/);
    }
    assert.equal(bed.fixture.requests.filter((q) => q.path.endsWith('/egress')).length, before);
  });

  test('command_start, then command_output from offsets, then command_kill', async () => {
    const id = await newSandbox();
    const started = await bed.call('command_start', { sandboxId: id, command: 'echo background' });
    const pid = (started.structuredContent as { pid: number }).pid;
    const out = await bed.call('command_output', { sandboxId: id, pid, waitMs: 5000 });
    const data = out.structuredContent as { running: boolean; exitCode: number; stdout: string; nextStdoutOffset: number };
    assert.deepEqual([data.running, data.exitCode, data.stdout, data.nextStdoutOffset], [false, 0, 'background\n', 11]);
    const rest = await bed.call('command_output', { sandboxId: id, pid, stdoutOffset: 5 });
    assert.equal((rest.structuredContent as { stdout: string }).stdout, 'round\n');
    const server = (await bed.call('command_start', { sandboxId: id, command: 'serve' })).structuredContent as { pid: number };
    const live = (await bed.call('command_output', { sandboxId: id, pid: server.pid })).structuredContent as { running: boolean; stdout: string };
    assert.deepEqual([live.running, live.stdout], [true, 'up\n']);
    const killed = await bed.call('command_kill', { sandboxId: id, pid: server.pid });
    assert.equal((killed.structuredContent as { killed: boolean }).killed, true);
    const dead = (await bed.call('command_output', { sandboxId: id, pid: server.pid, stdoutOffset: 3, waitMs: 5000 })).structuredContent as { running: boolean; signal: string; stdout: string };
    assert.deepEqual([dead.running, dead.signal, dead.stdout], [false, 'SIGKILL', '']);
    const unknown = await bed.call('command_output', { sandboxId: id, pid: 99_999 });
    assert.equal((unknown.structuredContent as { error: { code: string } }).error.code, 'PROCESS_NOT_FOUND');
  });
});

describe('protocol: resources', () => {
  test('ramify://sandboxes, ramify://sandboxes/{id} (listed per sandbox) and ramify://templates', async () => {
    const id = await newSandbox();
    const listed = await bed.client.listResources();
    assert.ok(listed.resources.some((r) => r.uri === 'ramify://sandboxes'));
    assert.ok(listed.resources.some((r) => r.uri === `ramify://sandboxes/${id}`));
    const one = await bed.client.readResource({ uri: `ramify://sandboxes/${id}` });
    assert.equal(JSON.parse((one.contents[0] as { text: string }).text).id, id);
    const all = JSON.parse(((await bed.client.readResource({ uri: 'ramify://sandboxes' })).contents[0] as { text: string }).text);
    assert.ok(all.sandboxes.some((s: { id: string }) => s.id === id));
    const templates = JSON.parse(((await bed.client.readResource({ uri: 'ramify://templates' })).contents[0] as { text: string }).text);
    assert.ok(templates.templates.some((t: { name: string }) => t.name === 'base'));
    await assert.rejects(bed.client.readResource({ uri: 'ramify://sandboxes/sbx_gone' }), /SANDBOX_NOT_FOUND: .*next: /);
  });
});
