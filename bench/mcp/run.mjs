#!/usr/bin/env node
// bench/mcp (issue 14; target in brackets): what a tool call through the MCP server costs over the SDK
// call it wraps, on one gVisor sandbox, in one run. Rows, each `true` run in the foreground:
//   sdk    sbx.commands.run('true') with @ramify/sdk: the raw mechanism, the baseline
//   http   tools/call command_run through the daemon's /mcp (official StreamableHTTPClientTransport)
//          [p50 <= 2x sdk]
//   stdio  tools/call command_run through `ramify mcp` (official StdioClientTransport) [p50 <= 2x sdk]
// Samples are taken in rounds, the rows' order rotating each round, so outside load falls on all alike.
// Its own daemon in-process (prefix `rmkm`, a temp data dir), as root; removes its sandbox, namespaces and
// tables afterwards. Needs the packages built and the base rootfs (as `npm test`). Run it under the lock:
//   flock /tmp/ramify-real-tests.lock node bench/mcp/run.mjs [--calls 100] [--rounds 5] [--warmup 10]
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Sandbox } from '@ramify/sdk';
import { startBenchDaemon } from '../support/in-process-daemon.mjs';
import { nearestRank, ok } from '../support/stats.mjs';

const { values } = parseArgs({ options: { calls: { type: 'string', default: '100' }, rounds: { type: 'string', default: '5' }, warmup: { type: 'string', default: '10' } } });
const CALLS = Number(values.calls);
const ROUNDS = Number(values.rounds);
const WARMUP = Number(values.warmup);
const TARGET_RATIO = 2;
const CLI = join(import.meta.dirname, '../../packages/cli/dist/main.js');

const daemon = await startBenchDaemon({ prefix: 'rmkm', name: 'mcp' });
const conn = { apiUrl: daemon.server.url, apiKey: daemon.key };
const clients = [];
try {
  const sbx = await Sandbox.create({ ...conn, template: 'base', timeoutMs: 3_600_000 });
  const http = new Client({ name: 'bench-http', version: '1' });
  await http.connect(new StreamableHTTPClientTransport(new URL(`${conn.apiUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${conn.apiKey}` } } }));
  const stdio = new Client({ name: 'bench-stdio', version: '1' });
  await stdio.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], stderr: 'ignore', env: { PATH: process.env.PATH ?? '', RAMIFY_API_URL: conn.apiUrl, RAMIFY_API_KEY: conn.apiKey } }));
  clients.push(http, stdio);
  const viaMcp = (client) => async () => {
    const r = await client.callTool({ name: 'command_run', arguments: { sandboxId: sbx.sandboxId, command: 'true' } });
    if (r.isError || r.structuredContent.exitCode !== 0) throw new Error(`command_run failed: ${JSON.stringify(r.content)}`);
  };
  const rows = [
    { name: 'sdk', what: "sbx.commands.run('true') (baseline)", call: async () => { await sbx.commands.run('true'); } },
    { name: 'http', what: 'command_run via /mcp (Streamable HTTP)', call: viaMcp(http) },
    { name: 'stdio', what: 'command_run via ramify mcp (stdio)', call: viaMcp(stdio) },
  ];
  for (const row of rows) { row.times = []; for (let i = 0; i < WARMUP; i++) await row.call(); }
  const per = Math.ceil(CALLS / ROUNDS);
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < rows.length; k++) {
      const row = rows[(r + k) % rows.length];
      for (let i = 0; i < per; i++) {
        const t0 = performance.now();
        await row.call();
        row.times.push(performance.now() - t0);
      }
    }
  }
  const base = nearestRank(rows[0].times, 0.5);
  console.log(`bench/mcp: ${per * ROUNDS} foreground \`true\` runs per row in ${ROUNDS} rounds (load ${loadavg()[0].toFixed(2)}), one gVisor sandbox`);
  console.log(`${'ROW'.padEnd(6)} ${'WHAT'.padEnd(40)} ${'P50 MS'.padStart(7)} ${'P95 MS'.padStart(7)} ${'X SDK'.padStart(6)}  TARGET`);
  for (const row of rows) {
    const p50 = nearestRank(row.times, 0.5);
    const ratio = p50 / base;
    const target = row.name === 'sdk' ? '-' : `p50 <= ${TARGET_RATIO}x sdk: ${ok(ratio, TARGET_RATIO)}`;
    console.log(`${row.name.padEnd(6)} ${row.what.padEnd(40)} ${p50.toFixed(1).padStart(7)} ${nearestRank(row.times, 0.95).toFixed(1).padStart(7)} ${ratio.toFixed(2).padStart(6)}  ${target}`);
  }
} finally {
  for (const c of clients) await c.close().catch(() => undefined);
  await daemon.stop();
}
