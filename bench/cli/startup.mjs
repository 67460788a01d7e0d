#!/usr/bin/env node
// bench/cli/startup: how long the `ramify` CLI takes to start and answer, against the raw mechanism it
// cannot beat, `node -e 0` (a Node process that loads nothing), in the same run. Rows [target]:
//   node -e 0                 the baseline
//   ramify --help             commander's tree and every command module, no request [<= 3x node -e 0]
//   ramify sandbox list --json  the same plus the SDK's HTTP client, one GET [<= 4x node -e 0]
//   ramify sandbox exec ID -- echo hi  the same plus `ws`, one command over a WebSocket [<= 5x node -e 0]
// The API is the SDK's in-process contract fixture (`@ramify/sdk/testing`, as the CLI protocol tests use),
// so the figures are the CLI's own start and not a runtime's. Samples are taken in rounds, the rows' order
// rotating each round, so outside load falls on all alike; each figure is the median wall time of a
// child process from spawn to exit. Needs the packages built (npm run build); no root. Under the lock:
//   flock /tmp/ramify-real-tests.lock node bench/cli/startup.mjs [--runs 15] [--cli path/to/main.js]
// (`--cli`: another build of the CLI, e.g. a checkout before a change, to compare against.)
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Sandbox } from '@ramify/sdk';
import { startContractServer } from '@ramify/sdk/testing';
import { ratioTarget, upperMedian } from '../support/stats.mjs';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '15' }, cli: { type: 'string', default: join(import.meta.dirname, '../../packages/cli/dist/main.js') } } });
const RUNS = Number(values.runs);
const CLI = values.cli;

/** Wall time of `node ...args` from spawn to exit, ms. @throws Error when it exits non-zero. */
function timeRun(args, env) {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(performance.now() - t) : reject(new Error(`node ${args.join(' ')} exited ${code}: ${stderr}`))));
  });
}

const server = await startContractServer();
try {
  const env = { ...process.env, RAMIFY_API_URL: server.url, RAMIFY_API_KEY: server.apiKey };
  const sbx = await Sandbox.create({ apiUrl: server.url, apiKey: server.apiKey });
  const rows = [
    { name: 'node -e 0', args: ['-e', '0'] },
    { name: 'ramify --help', args: [CLI, '--help'], target: 3 },
    { name: 'ramify sandbox list --json', args: [CLI, 'sandbox', 'list', '--json'], target: 4 },
    { name: 'ramify sandbox exec ID -- echo hi', args: [CLI, 'sandbox', 'exec', sbx.sandboxId, '--', 'echo hi'], target: 5 },
  ];
  for (const row of rows) await timeRun(row.args, env); // warm-up: the file system cache
  const samples = rows.map(() => []);
  for (let round = 0; round < RUNS; round++) {
    for (let k = 0; k < rows.length; k++) {
      const i = (round + k) % rows.length;
      samples[i].push(await timeRun(rows[i].args, env));
    }
  }
  const base = upperMedian(samples[0]);
  console.log(`bench/cli/startup: ${CLI}, ${RUNS} runs per row (rotating order), median wall time from spawn to exit, against the SDK's contract fixture; load average ${loadavg()[0].toFixed(2)}`);
  console.log(['row', 'median ms', 'min ms', 'x node -e 0', 'target'].join('\t'));
  rows.forEach((row, i) => {
    const m = upperMedian(samples[i]);
    const ratio = m / base;
    const target = row.target === undefined ? 'baseline' : ratioTarget(ratio, row.target);
    console.log([row.name, m.toFixed(1), Math.min(...samples[i]).toFixed(1), `${ratio.toFixed(2)}x`, target].join('\t'));
  });
  await sbx.kill();
} finally {
  await server.close();
}
