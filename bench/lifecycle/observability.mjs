#!/usr/bin/env node
// bench/lifecycle/observability.mjs: what metering, metrics, events and traces together add to create,
// exec and pause (issue 15's target). Two gVisor daemons, each in a process of its own, on the same base
// image, prefixes `rmob` (everything on: the usage meter sampling every 5 s, events recorded, a webhook
// delivering each to a loopback receiver, Prometheus metrics, traces exported over OTLP/HTTP to a
// loopback collector) and `rmoo` (everything off: no metering, no events recorded, no metrics, no
// tracing). Metering alone, with idle sandboxes for its sampler to read: bench/lifecycle/metering.mjs. Iterations alternate between them, so drift hits both alike; medians of create (SDK
// Sandbox.create), exec (`commands.run('true')`) and pause, and the ratio on/off, target <= 1.05, with a
// bootstrap 90 % interval of that ratio (the noise it has to be read against).
//   node bench/lifecycle/observability.mjs [--iterations 9] [--only metering|events|metrics|traces] [--logs DIR]
// `--only F` turns on just that feature in the `on` daemon (events include the webhook), to find which one
// costs what; the target applies to the default run with everything on.
// As root, packages built; run it under the real-tests lock:
//   flock /tmp/ramify-real-tests.lock node bench/lifecycle/observability.mjs
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Events, Sandbox, Webhook } from '@ramify/sdk';
import { startDaemonChild } from '../support/daemon-child.mjs';

const { values } = parseArgs({ options: { iterations: { type: 'string', default: '9' }, only: { type: 'string' }, logs: { type: 'string' } } });
// `--logs DIR`: each daemon's log at debug level (its phase timings: 'sandbox created', 'sandbox checkpointed')
// to DIR/<prefix>.log, to see which phase an on/off difference is in; the default keeps warnings only.
const daemonProcess = (prefix, options) => values.logs === undefined
  ? startDaemonChild(prefix, options)
  : startDaemonChild(prefix, { ...options, logLevel: 'debug' }, { logPath: join(values.logs, `${prefix}.log`) });
const FACTORS = ['metering', 'events', 'metrics', 'traces'];
if (values.only !== undefined && !FACTORS.includes(values.only)) throw new Error(`--only takes one of ${FACTORS.join(', ')}`);
const has = (factor) => values.only === undefined || values.only === factor;
const N = Number(values.iterations);
const TARGET = 1.05;

/** A loopback HTTP server answering 200 to everything; counts the requests. */
async function sink() {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count += 1;
      res.writeHead(200).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, count: () => count, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }) };
}

const receiver = await sink();
const collector = await sink();
// The receiver is on loopback: its daemon allows private webhook destinations (closed by default).
const on = await daemonProcess('rmob', {
  ...(has('metrics') ? { metricsListen: { host: '127.0.0.1', port: 0 } } : { metrics: 'off' }),
  ...(has('traces') ? { otlpEndpoint: collector.url } : {}),
  webhookAllowPrivate: true,
  coreOptions: { ...(has('events') ? {} : { events: 'off' }), ...(has('metering') ? {} : { usageSampleMs: 0 }) },
});
const off = await daemonProcess('rmoo', { metrics: 'off', coreOptions: { events: 'off', usageSampleMs: 0 } });
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))];
const median = (xs) => quantile(xs, 0.5);
/** p25-p75, the spread the ratio has to be read against on a busy machine. */
const spread = (xs) => `${quantile(xs, 0.25).toFixed(0)}-${quantile(xs, 0.75).toFixed(0)}`;
/**
 * 90 % bootstrap interval of the on/off median ratio (2000 resamples of each side, a fixed seed so a run's
 * figures print the same twice): how far the ratio itself moves with the machine's noise. A MISSED whose
 * interval holds 1.0 is not a cost the run has shown; an ok whose interval reaches past the target is not
 * proof of none.
 */
function ratioInterval(on, off) {
  let seed = 0x2545f491;
  const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const resample = (xs) => xs.map(() => xs[Math.floor(random() * xs.length)]);
  const ratios = Array.from({ length: 2000 }, () => median(resample(on)) / median(resample(off))).sort((a, b) => a - b);
  return `${quantile(ratios, 0.05).toFixed(3)}-${quantile(ratios, 0.95).toFixed(3)}`;
}
const time = async (fn) => { const t = performance.now(); const r = await fn(); return [performance.now() - t, r]; };
const results = { on: { create: [], exec: [], pause: [] }, off: { create: [], exec: [], pause: [] } };

try {
  const onConn = { apiUrl: on.url, apiKey: on.key, requestTimeoutMs: 600_000 };
  const offConn = { apiUrl: off.url, apiKey: off.key, requestTimeoutMs: 600_000 };
  if (has('events')) await Webhook.create(`${receiver.url}/hook`, onConn);
  const one = async (conn, into) => {
    const [tc, sbx] = await time(() => Sandbox.create({ ...conn, template: 'base', timeoutMs: 600_000 }));
    into.create.push(tc);
    into.exec.push((await time(() => sbx.commands.run('true')))[0]);
    into.pause.push((await time(() => sbx.pause()))[0]);
    await sbx.kill();
  };
  // One warm-up each (first restores fill caches), not counted.
  await one(onConn, { create: [], exec: [], pause: [] });
  await one(offConn, { create: [], exec: [], pause: [] });
  for (let i = 0; i < N; i++) {
    if (i % 2 === 0) { await one(onConn, results.on); await one(offConn, results.off); }
    else { await one(offConn, results.off); await one(onConn, results.on); }
  }
  await new Promise((resolve) => setTimeout(resolve, 2000));
  // Resident memory now and at its peak (/proc): each runtime command forks its daemon, and a fork's
  // page-table copy grows with it, so a larger `on` daemon pays more per spawn.
  const memory = async (pid) => {
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    const kb = (field) => Number(status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))?.[1] ?? NaN) / 1024;
    return `${kb('VmRSS').toFixed(0)} MiB (peak ${kb('VmHWM').toFixed(0)})`;
  };
  const events = has('events') ? (await Events.list({ ...onConn, limit: 1000 })).events.length : 0;
  console.log(`bench/lifecycle/observability${values.only ? ` --only ${values.only}` : ''}: gVisor, ${N} iterations each, alternating; medians in ms; load average ${(await import('node:os')).loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log(`on: ${events} events recorded, ${receiver.count()} webhook deliveries, ${collector.count()} OTLP export requests, metrics at ${on.metricsAddress}; off: no events, metrics or traces`);
  console.log(`daemon resident memory at the end: on ${await memory(on.pid)}, off ${await memory(off.pid)}`);
  console.log(['operation', 'on', 'off', 'ratio', 'target', 'ratio 90% interval', 'on p25-p75', 'off p25-p75'].join('\t'));
  for (const op of ['create', 'exec', 'pause']) {
    const ratio = median(results.on[op]) / median(results.off[op]);
    console.log([op, median(results.on[op]).toFixed(1), median(results.off[op]).toFixed(1), `${ratio.toFixed(3)}x`, `<= ${TARGET}x ${ratio <= TARGET ? 'ok' : 'MISSED'}`, ratioInterval(results.on[op], results.off[op]), spread(results.on[op]), spread(results.off[op])].join('\t'));
  }
} finally {
  await on.stop();
  await off.stop();
  await receiver.close();
  await collector.close();
}
