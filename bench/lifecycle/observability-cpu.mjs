#!/usr/bin/env node
// bench/lifecycle/observability-cpu.mjs: what metering, metrics, events and traces cost the daemon itself,
// without a runtime: the companion of bench/lifecycle/observability.mjs, whose gVisor operations (create
// ~550 ms, exec ~120 ms, pause ~300 ms on 2 shared cores) bury a few ms of the daemon's own work in their
// noise. Two daemons, each in a process of its own, on core's FAKE runtime, network and agent (the real
// HTTP/WebSocket server, store, snapshot storage, meter, event recorder, webhook dispatcher, prom-client and
// OpenTelemetry): one with everything on (as the observability bench's: the meter sampling every 5 s, a
// webhook to a loopback receiver, metrics, traces to a loopback collector), one with everything off.
// Lives of a sandbox (SDK create, --execs `commands.run('true')`, pause, kill) alternate between them in
// ABBA order with --settle-ms after each (deferred deliveries and exports go then). Printed per operation:
// the medians on and off, their difference (ms: what observability adds to the acknowledged path, the
// fake's own work being the same on both) with a 90 % bootstrap interval of the median of paired
// differences, and each daemon's CPU time per life (/proc, settle included: the background work too).
// No runtime, so no lock: node bench/lifecycle/observability-cpu.mjs [--iterations 200] [--execs 3] [--settle-ms 400]
import { fork } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Webhook } from '@ramify/sdk';
import { abbaPair, OBSERVABILITY_OFF, sandboxLife, startSink } from '../support/observability-rig.mjs';
import { bootstrapInterval, mean, median } from '../support/stats.mjs';

const { values } = parseArgs({
  options: {
    iterations: { type: 'string', default: '200' },
    execs: { type: 'string', default: '3' },
    'settle-ms': { type: 'string', default: '400' },
    daemon: { type: 'string' },
  },
});

if (values.daemon !== undefined) {
  // A child: one daemon on the fake runtime, configured by the JSON in --daemon; prints { url, key, pid }.
  const { FakeNetwork, FakeRuntime, seedTemplate } = await import('@ramify/core/testing');
  const { serve } = await import('../../packages/daemon/dist/serve.js');
  const dataDir = await mkdtemp(join(tmpdir(), 'ramify-obs-cpu-'));
  const runtime = new FakeRuntime();
  const server = await serve({
    dataDir, port: 0, logLevel: 'warn', print: () => undefined, ...JSON.parse(values.daemon),
    overrides: { runtimes: [runtime], network: new FakeNetwork(), connectAgent: runtime.connectAgent, templateBuilder: null },
  });
  await seedTemplate(server.core.store, server.core.storage, { files: {}, endpoints: [], identities: [] });
  process.send({ url: server.url, key: server.newApiKey });
  process.on('disconnect', async () => {
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
    process.exit(0);
  });
} else {
  const N = Number(values.iterations);
  const EXECS = Number(values.execs);
  const SETTLE_MS = Number(values['settle-ms']);
  const OPS = ['create', 'exec', 'pause'];

  const receiver = await startSink();
  const collector = await startSink();
  const start = async (options) => {
    // RAMIFY_BENCH_DAEMON_NODE_ARGS: Node options for the daemons' processes only (e.g. `--cpu-prof --cpu-prof-dir=DIR`).
    const execArgv = process.env.RAMIFY_BENCH_DAEMON_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
    const child = fork(new URL(import.meta.url).pathname, ['--daemon', JSON.stringify(options)], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const info = await new Promise((resolve, reject) => { child.once('message', resolve); child.once('exit', (code) => reject(new Error(`daemon exited (${code})`))); });
    return { ...info, pid: child.pid, conn: { apiUrl: info.url, apiKey: info.key }, stop: () => new Promise((resolve) => { child.once('exit', resolve); child.disconnect(); }) };
  };
  const on = await start({ metricsListen: { host: '127.0.0.1', port: 0 }, otlpEndpoint: collector.url, webhookAllowPrivate: true });
  const off = await start(OBSERVABILITY_OFF);

  const ticks = async (pid) => {
    const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, ms (USER_HZ 100)
  };
  /** 90 % bootstrap interval of the median of `xs` (paired differences, ms), as `low to high`. */
  function interval(xs) {
    const [low, high] = bootstrapInterval([xs], ([resampled]) => median(resampled));
    return `${low.toFixed(2)} to ${high.toFixed(2)}`;
  }
  /** One sandbox's life on `daemon` (bench/support/observability-rig.mjs) and the daemon's CPU time over it, ms. */
  async function life(daemon) {
    const cpu = await ticks(daemon.pid);
    const times = await sandboxLife(daemon.conn, { execs: EXECS, settleMs: SETTLE_MS });
    return { ...times, cpu: (await ticks(daemon.pid)) - cpu };
  }

  const pairs = [];
  try {
    await Webhook.create(`${receiver.url}/hook`, on.conn);
    for (let i = 0; i < 3; i++) { await life(on); await life(off); }
    for (let i = 0; i < N; i++) pairs.push(await abbaPair(i, () => life(on), () => life(off)));
    console.log(`bench/lifecycle/observability-cpu: fake runtime, ${N} pairs (ABBA), ${EXECS} execs per life, ${SETTLE_MS} ms settle; on: ${receiver.count()} webhook deliveries, ${collector.count()} OTLP exports`);
    console.log(['operation', 'on ms', 'off ms', 'on - off (median of pairs)', '90% interval'].join('\t'));
    for (const op of OPS) {
      const diffs = pairs.map((p) => p.on[op] - p.off[op]);
      console.log([op, median(pairs.map((p) => p.on[op])).toFixed(2), median(pairs.map((p) => p.off[op])).toFixed(2), median(diffs).toFixed(2), interval(diffs)].join('\t'));
    }
    const cpuDiffs = pairs.map((p) => p.on.cpu - p.off.cpu);
    console.log(`daemon CPU per life (create, ${EXECS} execs, pause, kill, settle; 10 ms ticks): on ${median(pairs.map((p) => p.on.cpu))} ms, off ${median(pairs.map((p) => p.off.cpu))} ms; mean difference ${mean(cpuDiffs).toFixed(1)} ms`);
  } finally {
    await on.stop();
    await off.stop();
    await receiver.close();
    await collector.close();
  }
}
