/**
 * The MCP server end to end (issue 14): a REAL daemon in-process (gVisor, namespaces and nftables under
 * prefix `rmmc`, egress enforcement on) driven by the official MCP client over both transports, the
 * built `ramify mcp` spawned by `StdioClientTransport` and the daemon's `/mcp` by
 * `StreamableHTTPClientTransport`, and by `@modelcontextprotocol/inspector`'s CLI (a client nobody here
 * wrote). One sandbox is shared across the cases, which run in order. Skipped, with the reason, when not
 * root, without runsc, or without the rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { listAudit } from '@ramify/sdk';
import { openRealDaemon, realRuntimeSkip, type RealDaemon } from './real-test-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc']);
const ROOT = join(import.meta.dirname, '../../..');
const CLI = join(ROOT, 'packages/cli/dist/main.js');
const INSPECTOR = join(ROOT, 'node_modules/.bin/mcp-inspector');

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- test-only reads of structured results
type Data = any;
const data = (r: CallToolResult): Data => r.structuredContent;
const text = (r: CallToolResult): string => (r.content[0] as { text: string }).text;

/** `tools/call` that must succeed (not `isError`). */
async function ok(client: Client, name: string, args: Record<string, unknown>): Promise<Data> {
  const r = (await client.callTool({ name, arguments: args }, undefined, { timeout: 300_000 })) as CallToolResult;
  assert.notEqual(r.isError, true, `${name}: ${text(r)}`);
  return data(r);
}

/** Run the inspector's CLI mode against `ramify mcp` (asynchronously: the daemon answers from this process). */
function inspector(daemon: RealDaemon, args: string[]): Promise<Ran> {
  return collect(INSPECTOR, ['--cli', '-e', `RAMIFY_API_URL=${daemon.conn.apiUrl}`, '-e', `RAMIFY_API_KEY=${daemon.conn.apiKey}`, ...args, '--', process.execPath, CLI, 'mcp']);
}

interface Ran { code: number | null; stdout: string; stderr: string }

/** Run a program to its end, asynchronously (the daemon answers from this very process), with its output. */
function collect(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Ran> {
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** The built CLI against `daemon`. */
function runCli(daemon: RealDaemon, args: string[]): Promise<Ran> {
  return collect(process.execPath, [CLI, ...args], { ...process.env, RAMIFY_API_URL: daemon.conn.apiUrl, RAMIFY_API_KEY: daemon.conn.apiKey });
}

describe('MCP server through a real daemon (gVisor): stdio, Streamable HTTP and the inspector', { skip, timeout: 600_000 }, () => {
  let daemon: RealDaemon;
  let stdio: Client;
  let http: Client;
  let sandboxId: string;
  before(async () => {
    daemon = await openRealDaemon({ runtime: 'gvisor', prefix: 'rmmc', rootfs: rootfs as string, templateId: 'tpl_mcp' });
    stdio = new Client({ name: 'real-mcp-stdio', version: '1' });
    await stdio.connect(new StdioClientTransport({
      command: process.execPath, args: [CLI, 'mcp'], stderr: 'pipe',
      env: { PATH: process.env.PATH ?? '', RAMIFY_API_URL: daemon.conn.apiUrl, RAMIFY_API_KEY: daemon.conn.apiKey },
    }));
    http = new Client({ name: 'real-mcp-http', version: '1' });
    await http.connect(new StreamableHTTPClientTransport(new URL(`${daemon.conn.apiUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${daemon.conn.apiKey}` } } }));
  });
  after(async () => {
    await stdio?.close().catch(() => undefined);
    await http?.close().catch(() => undefined);
    await daemon?.close();
  });

  test('both transports list the same tools, with strict schemas and all four annotations', async () => {
    const [a, b] = [(await stdio.listTools()).tools, (await http.listTools()).tools];
    assert.deepEqual(a, b);
    const byName = new Map(a.map((t) => [t.name, t]));
    for (const name of ['sandbox_create', 'sandbox_list', 'sandbox_get', 'sandbox_kill', 'sandbox_pause', 'sandbox_resume', 'sandbox_set_timeout', 'snapshot_create', 'snapshot_list',
      'command_run', 'command_start', 'command_output', 'command_kill', 'files_read', 'files_write', 'files_list', 'files_remove', 'sandbox_fork', 'sandbox_explore',
      'egress_get', 'egress_set', 'egress_log', 'port_expose', 'port_url']) {
      const t = byName.get(name);
      assert.ok(t, name);
      assert.equal((t.inputSchema as { additionalProperties?: boolean }).additionalProperties, false, name);
      assert.deepEqual(Object.keys(t.annotations ?? {}).filter((k) => k.endsWith('Hint')).sort(), ['destructiveHint', 'idempotentHint', 'openWorldHint', 'readOnlyHint'], name);
    }
    assert.deepEqual(byName.get('command_run')!.inputSchema.required, ['sandboxId', 'command']);
    assert.deepEqual(byName.get('sandbox_kill')!.annotations, { title: 'Kill a sandbox', readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false });
    assert.equal(byName.get('files_read')!.annotations?.readOnlyHint, true);
  });

  test("stdio: create a sandbox (template base by default) and run python3 -c 'print(6*7)'", async () => {
    const created = await ok(stdio, 'sandbox_create', { timeoutMs: 600_000 });
    sandboxId = created.sandboxId;
    assert.match(sandboxId, /^sbx_/);
    assert.equal(created.sandbox.state, 'running');
    const run = await ok(stdio, 'command_run', { sandboxId, command: "python3 -c 'print(6*7)'" });
    assert.deepEqual([run.exitCode, run.stdout, run.stderr], [0, '42\n', '']);
  });

  test('the inspector (CLI mode) lists the tools of ramify mcp and calls command_run', async () => {
    const listed = await inspector(daemon, ['--method', 'tools/list']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok((JSON.parse(listed.stdout).tools as { name: string }[]).some((t) => t.name === 'command_run'));
    const called = await inspector(daemon, ['--method', 'tools/call', '--tool-name', 'command_run', '--tool-arg', `sandboxId=${sandboxId}`, '--tool-arg', 'command=echo $((6*7)) from-inspector']);
    assert.equal(called.code, 0, called.stderr);
    const result = JSON.parse(called.stdout);
    assert.equal(result.isError, undefined, called.stdout);
    assert.equal(result.structuredContent.stdout, '42 from-inspector\n');
  });

  test('HTTP: a binary file written as base64 reads back byte-exact (and the sandbox sees the same bytes)', async () => {
    const bytes = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(64 * 1024)]);
    const written = await ok(http, 'files_write', { sandboxId, path: '/root/blob.bin', content: bytes.toString('base64'), encoding: 'base64' });
    assert.equal(written.size, bytes.byteLength);
    const read = await ok(http, 'files_read', { sandboxId, path: '/root/blob.bin' });
    assert.equal(read.encoding, 'base64');
    assert.ok(Buffer.from(read.content, 'base64').equals(bytes));
    const sum = await ok(http, 'command_run', { sandboxId, command: 'sha256sum /root/blob.bin' });
    assert.equal(sum.stdout.split(' ')[0], createHash('sha256').update(bytes).digest('hex'));
  });

  test('HTTP: egress deny-all, a lookup refused, the egress log says so; open again', async () => {
    assert.equal((await ok(http, 'egress_set', { sandboxId, mode: 'deny-all' })).policy.mode, 'deny-all');
    assert.equal((await ok(http, 'egress_get', { sandboxId })).policy.mode, 'deny-all');
    const lookup = await ok(http, 'command_run', { sandboxId, command: 'getent hosts mcp-denied.example', timeoutMs: 20_000 });
    assert.notEqual(lookup.exitCode, 0, 'a denied name does not resolve');
    const log = await ok(http, 'egress_log', { sandboxId, verdict: 'denied' });
    assert.ok(log.entries.some((e: Data) => e.protocol === 'dns' && e.name === 'mcp-denied.example' && e.verdict === 'denied'), JSON.stringify(log.entries));
    assert.equal((await ok(http, 'egress_set', { sandboxId, mode: 'open' })).policy.mode, 'open');
  });

  test('HTTP: pause, then fork x2 from the paused sandbox (its files and memory in each), kill the forks', async () => {
    await ok(http, 'command_run', { sandboxId, command: 'echo before-pause > /root/marker' });
    assert.equal((await ok(http, 'sandbox_pause', { sandboxId })).sandbox.state, 'paused');
    const forked = await ok(http, 'sandbox_fork', { sandboxId, count: 2, confirm: true });
    assert.equal(forked.forks.length, 2);
    for (const id of forked.forks) {
      const r = await ok(http, 'command_run', { sandboxId: id, command: 'cat /root/marker && sha256sum /root/blob.bin | cut -c1-8' });
      assert.match(r.stdout, /^before-pause\n[0-9a-f]{8}\n$/);
      assert.equal((await ok(http, 'sandbox_kill', { sandboxId: id })).killed, true);
    }
    assert.equal((await ok(http, 'sandbox_get', { sandboxId })).sandbox.state, 'paused', 'the source stays paused');
  });

  test('HTTP: explore three strategies from the paused sandbox, one passing the expected output: the winner kept, the rest killed', async () => {
    const report = await ok(http, 'sandbox_explore', {
      sandboxId, confirm: true, expectedOutput: '42',
      strategies: [
        { name: 'square', command: "python3 -c 'print(6*6)'" },
        { name: 'product', command: "python3 -c 'print(6*7)'" },
        { name: 'crash', command: 'cat /root/marker && exit 3' },
      ],
    });
    assert.equal(report.winner.strategy, 'product');
    assert.equal(report.winner.score, 1);
    assert.deepEqual(report.entries.map((e: Data) => [e.name, e.outcome, e.error?.code ?? null]), [['square', 'killed', null], ['product', 'winner', null], ['crash', 'killed', 'COMMAND_EXIT']]);
    assert.match(report.entries[0].error.message, /does not contain the expected output/);
    assert.equal(report.forkTree.sandboxId, sandboxId);
    assert.deepEqual(report.forkTree.children.map((c: Data) => c.sandboxId), report.entries.map((e: Data) => e.sandboxId));
    assert.equal((await ok(http, 'sandbox_get', { sandboxId: report.winner.sandboxId })).sandbox.state, 'running');
    for (const loser of [report.entries[0].sandboxId, report.entries[2].sandboxId]) {
      const r = (await http.callTool({ name: 'sandbox_get', arguments: { sandboxId: loser } })) as CallToolResult;
      assert.ok(r.isError ? data(r).error.code === 'SANDBOX_NOT_FOUND' : data(r).sandbox.state === 'killed', text(r));
    }
    assert.equal((await ok(http, 'sandbox_kill', { sandboxId: report.winner.sandboxId })).killed, true);
  });

  test('a bad argument is a tool error naming the field; the daemon refuses /mcp without the right key (401)', async () => {
    const bad = (await http.callTool({ name: 'command_run', arguments: { sandboxId, cmd: 'ls' } })) as CallToolResult;
    assert.equal(bad.isError, true);
    assert.equal(data(bad).error.code, 'VALIDATION_FAILED');
    assert.deepEqual(data(bad).error.details.issues.map((i: Data) => i.path), ['arguments.command', 'arguments']);
    assert.match(text(bad), /command: .*; cmd: unknown argument 'cmd'/);
    for (const authorization of [undefined, `Bearer rmf_${'0'.repeat(40)}`]) {
      const res = await fetch(`${daemon.conn.apiUrl}/mcp`, {
        method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      assert.equal(res.status, 401);
    }
    const wrong = new Client({ name: 'wrong-key', version: '1' });
    await assert.rejects(wrong.connect(new StreamableHTTPClientTransport(new URL(`${daemon.conn.apiUrl}/mcp`), { requestInit: { headers: { authorization: 'Bearer rmf_wrong' } } })),
      (err: Error & { code?: unknown }) => err.code === 401);
  });

  test('stdio: a private network: create, attach the sandbox, list shows its name, a second one is refused in use, detach, delete', async () => {
    const created = await ok(stdio, 'network_create', { name: 'mcpnet' });
    assert.equal(created.network.name, 'mcpnet');
    const joined = await ok(stdio, 'network_attach', { sandboxId, network: 'mcpnet', alias: 'main' });
    assert.equal(joined.membership.hostname, 'main.mcpnet.internal');
    const listed = await ok(stdio, 'network_list', {});
    assert.deepEqual(listed.networks.map((n: Data) => [n.name, n.members.map((m: Data) => m.sandboxId)]), [['mcpnet', [sandboxId]]]);
    const inUse = (await stdio.callTool({ name: 'network_delete', arguments: { network: 'mcpnet' } })) as CallToolResult;
    assert.equal(inUse.isError, true);
    assert.match(text(inUse), /^NETWORK_IN_USE: .*sbx_/);
    await ok(stdio, 'network_detach', { sandboxId, network: 'mcpnet' });
    assert.equal((await ok(stdio, 'network_delete', { network: 'mcpnet' })).deleted, true);
    assert.deepEqual((await ok(stdio, 'network_list', {})).networks, []);
  });

  test('every tool call is in the audit log with the key and the tool; kill everything', async () => {
    const keyId = (await daemon.server.core.store.listApiKeys())[0]!.id;
    const entries = await listAudit({ ...daemon.conn, limit: 1000 });
    const tools = new Set(entries.filter((e) => e.tool !== null).map((e) => e.tool));
    for (const t of ['sandbox_create', 'command_run', 'files_write', 'files_read', 'egress_set', 'egress_log', 'sandbox_pause', 'sandbox_fork', 'sandbox_explore', 'sandbox_kill']) assert.ok(tools.has(t), t);
    assert.ok(entries.filter((e) => e.tool !== null).every((e) => e.apiKeyId === keyId));
    const explore = entries.filter((e) => e.tool === 'sandbox_explore');
    assert.ok(explore.some((e) => e.action === 'sandbox.fork' && e.sandboxId === sandboxId), 'the fork explore made');
    // The CLI shows the same: `ramify audit --sandbox ID` names the tools.
    const cli = await runCli(daemon, ['audit', '--sandbox', sandboxId, '--limit', '1000']);
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /^ID\s+AT\s+KEY\s+TOOL\s+ACTION/);
    assert.match(cli.stdout, /sandbox_explore\s+sandbox\.fork/);

    assert.equal((await ok(stdio, 'sandbox_kill', { sandboxId })).killed, true);
    assert.deepEqual((await ok(stdio, 'sandbox_list', {})).sandboxes, []);
  });
});
