#!/usr/bin/env node
// bench/lifecycle/observability.mjs: what metering, metrics, events and traces together add to create,
// exec and pause (issue 15's target: <= 5 % on each median). Two gVisor daemons, each in a process of its
// own, alive side by side on the same base image, prefixes `rmob` and `rmoo`: one on (the usage meter
// sampling every 5 s, events recorded, a webhook delivering each to a loopback receiver, Prometheus
// metrics, traces exported over OTLP/HTTP to a loopback collector), the other off (no metering, events,
// metrics or traces).
// Metering alone, with idle sandboxes for its sampler to read: bench/lifecycle/metering.mjs.
//
// Paired crossover design (docs/design/EVENTS.md, "Cost (bench)"): each iteration runs one sandbox's life
// on each daemon, create, --execs `commands.run('true')`, pause, kill, which daemon first in ABBA order
// (on-off, off-on, off-on, on-off, ...), with --settle-ms of quiet after each life (so neither daemon's
// deferred work, webhook deliveries, a meter's background reading, a kill's cleanup, lands in the other's
// operations). Per iteration and operation the pair's ratio on/off (exec: the medians of its --execs).
// The run has two halves: the daemons are stopped after the first and started again with their roles
// swapped (rmob on, then rmoo on), so what differs between the two daemons themselves cancels out. The
// figure judged against <= 1.05 is the geometric mean of the two halves' medians of paired ratios, with a
// 90 % bootstrap interval (2000 resamples of each half's pairs, fixed seed). A pair's two halves are
// seconds apart, so the machine's slow drifts cancel; what is left is its fast noise, which the interval shows.
//   node bench/lifecycle/observability.mjs [--iterations 31] [--execs 3] [--settle-ms 1000] [--only metering|events|metrics|traces] [--aa] [--logs DIR]
// `--only F` turns on just that feature in the `on` daemon (events include the webhook), to find which one
// costs what; the target applies to the default run with everything on. `--aa` configures both daemons
// alike (both off): an A/A run, whose ratios show the bench's own noise floor and any difference between
// the two daemons that is not observability (their prefixes, slots, processes; each half's own ratio shows that).
// As root, packages built; run it under the real-tests lock:
//   flock /tmp/ramify-real-tests.lock node bench/lifecycle/observability.mjs
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Events, Webhook } from '@ramify/sdk';
import { startDaemonChild } from '../support/daemon-child.mjs';
import { abbaPair, OBSERVABILITY_OFF as OFF, sandboxLife, startSink } from '../support/observability-rig.mjs';
import { bootstrapInterval, geometricMean, median, quantile, ratioTarget } from '../support/stats.mjs';

const { values } = parseArgs({
  options: {
    iterations: { type: 'string', default: '31' },
    execs: { type: 'string', default: '3' },
    'settle-ms': { type: 'string', default: '1000' },
    only: { type: 'string' },
    aa: { type: 'boolean', default: false },
    logs: { type: 'string' },
  },
});
// `--logs DIR`: each daemon's log at debug level (its phase timings: 'sandbox created', 'sandbox checkpointed')
// to DIR/<prefix>-<on|off>.log, to see which phase an on/off difference is in; the default keeps warnings only.
const daemonProcess = (prefix, role, options) => values.logs === undefined
  ? startDaemonChild(prefix, options)
  : startDaemonChild(prefix, { ...options, logLevel: 'debug' }, { logPath: join(values.logs, `${prefix}-${role}.log`) });
const FACTORS = ['metering', 'events', 'metrics', 'traces'];
if (values.only !== undefined && !FACTORS.includes(values.only)) throw new Error(`--only takes one of ${FACTORS.join(', ')}`);
if (values.only !== undefined && values.aa) throw new Error('--aa and --only exclude each other');
const has = (factor) => !values.aa && (values.only === undefined || values.only === factor);
const N = Number(values.iterations);
const EXECS = Number(values.execs);
const SETTLE_MS = Number(values['settle-ms']);
if (!(N >= 2 && EXECS >= 1 && SETTLE_MS >= 0)) throw new Error('--iterations takes 2 or more, --execs a positive number, --settle-ms a non-negative one');
const TARGET = 1.05;
const OPS = ['create', 'exec', 'pause'];

const ON = values.aa ? OFF : {
  ...(has('metrics') ? { metricsListen: { host: '127.0.0.1', port: 0 } } : { metrics: 'off' }),
  ...(has('traces') ? { otlpEndpoint: null } : {}),
  // The receiver is on loopback: the daemon allows private webhook destinations (closed by default).
  webhookAllowPrivate: true,
  coreOptions: { ...(has('events') ? {} : { events: 'off' }), ...(has('metering') ? {} : { usageSampleMs: 0 }) },
};
const receiver = await startSink();
const collector = await startSink();
if (ON.otlpEndpoint === null) ON.otlpEndpoint = collector.url;

/** p25-p75, the spread a median has to be read against. */
const spread = (xs) => `${quantile(xs, 0.25).toFixed(0)}-${quantile(xs, 0.75).toFixed(0)}`;
/** The estimate: the geometric mean of the two halves' medians of paired ratios (the daemons' roles swapped between them). */
const estimate = (halves) => geometricMean(halves.map(median));
/**
 * 90 % bootstrap interval of {@link estimate} (2000 resamples of each half's pairs, a fixed seed so a
 * run's figures print the same twice): how far the figure moves with the machine's noise. A MISSED whose
 * interval holds 1.0 is not a cost the run has shown; an ok whose interval reaches past the target is not
 * proof of none.
 */
const interval = (halves) => bootstrapInterval(halves, estimate);

/** One sandbox's life on a daemon: create, EXECS execs, pause, kill, then SETTLE_MS of quiet. Returns its times, ms. */
const life = (conn) => sandboxLife(conn, { execs: EXECS, settleMs: SETTLE_MS });

/** Resident memory of process `pid` now and at its peak (/proc). */
async function memory(pid) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = (field) => Number(status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))?.[1] ?? NaN) / 1024;
  return `${kb('VmRSS').toFixed(0)} MiB (peak ${kb('VmHWM').toFixed(0)})`;
}

/**
 * One half of the run: daemon `rmob` started first, then `rmoo`, the one named `onPrefix` configured ON
 * and the other OFF; `count` pairs in ABBA order after one warm-up life each. Returns the pairs and what
 * the daemons said at the end.
 */
async function half(onPrefix, count) {
  const daemons = {};
  try {
    for (const prefix of ['rmob', 'rmoo']) daemons[prefix] = await daemonProcess(prefix, prefix === onPrefix ? 'on' : 'off', prefix === onPrefix ? ON : OFF);
    const on = daemons[onPrefix];
    const off = daemons[onPrefix === 'rmob' ? 'rmoo' : 'rmob'];
    const onConn = { apiUrl: on.url, apiKey: on.key, requestTimeoutMs: 600_000 };
    const offConn = { apiUrl: off.url, apiKey: off.key, requestTimeoutMs: 600_000 };
    if (has('events')) await Webhook.create(`${receiver.url}/hook`, onConn);
    // One warm-up life each (the first restores fill caches), not counted.
    await life(onConn);
    await life(offConn);
    const pairs = [];
    for (let i = 0; i < count; i++) {
      pairs.push(await abbaPair(i, () => life(onConn), () => life(offConn)));
      loads.push(loadavg()[0]);
    }
    const events = has('events') ? (await Events.list({ ...onConn, limit: 1000 })).events.length : 0;
    return { pairs, events, memory: `on (${onPrefix}) ${await memory(on.pid)}, off ${await memory(off.pid)}`, metricsAddress: on.metricsAddress };
  } finally {
    for (const daemon of Object.values(daemons)) await daemon.stop();
  }
}

const loads = [loadavg()[0]];
try {
  // Two halves, the daemons' roles swapped between them (a crossover): an A/A run showed one of two
  // identically configured daemons 5-9 % slower than the other, so a difference between the daemons
  // themselves (prefix, start order, slots) would otherwise pass for observability's cost. Each half's
  // paired median has that difference once each way; their geometric mean cancels it.
  const halves = [await half('rmob', Math.ceil(N / 2)), await half('rmoo', Math.floor(N / 2))];
  const mode = values.aa ? ' --aa (A/A: both daemons off)' : values.only ? ` --only ${values.only}` : '';
  console.log(`bench/lifecycle/observability${mode}: gVisor, ${N} pairs (ABBA) in two halves with the daemons' roles swapped, ${EXECS} execs per life, ${SETTLE_MS} ms settle; times in ms; load average (1 min) ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}`);
  if (!values.aa) console.log(`on: ${halves.map((h) => h.events).join(' + ')} events recorded, ${receiver.count()} webhook deliveries, ${collector.count()} OTLP export requests, metrics at ${halves.map((h) => h.metricsAddress).join(', ')}; off: no events, metrics or traces`);
  console.log(`daemon resident memory at the end of each half: ${halves.map((h) => h.memory).join('; ')}`);
  console.log(['operation', 'on', 'off', 'ratio', 'target', '90% interval', 'half 1 (on=rmob)', 'half 2 (on=rmoo)', 'ratio of medians', 'on p25-p75', 'off p25-p75'].join('\t'));
  const pairs = halves.flatMap((h) => h.pairs);
  for (const op of OPS) {
    const onTimes = pairs.map((p) => p.on[op]);
    const offTimes = pairs.map((p) => p.off[op]);
    const ratios = halves.map((h) => h.pairs.map((p) => p.on[op] / p.off[op]));
    const ratio = estimate(ratios);
    const [low, high] = interval(ratios);
    console.log([
      op, median(onTimes).toFixed(1), median(offTimes).toFixed(1), `${ratio.toFixed(3)}x`, ratioTarget(ratio, TARGET),
      `${low.toFixed(3)}-${high.toFixed(3)}`, ...ratios.map((r) => `${median(r).toFixed(3)}x`), `${(median(onTimes) / median(offTimes)).toFixed(3)}x`, spread(onTimes), spread(offTimes),
    ].join('\t'));
  }
} finally {
  await receiver.close();
  await collector.close();
}
