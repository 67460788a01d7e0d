#!/usr/bin/env node
// bench/lifecycle/metering: what metering adds to create, exec and pause. Two gVisor daemons in this
// process on the same template image, each holding --background idle sandboxes for the sampler to read.
// Each round one has its meter on (the sampler every --sample-ms, the default 5000, its state-change
// writes and counter readings before each checkpoint and kill) and the other off (`usageSampleMs: 0`,
// set live: nothing read or written), swapped every round; each round runs create, --execs execs, pause
// and kill --cycles times on both back to back (which goes first alternates too), so both see the same
// machine. Printed per operation: the medians, the median of the
// rounds' paired ratios on/off (what the target is judged on: a busy machine moves both halves of a pair
// alike), the ratio of the medians, and the meter's own time inside the operation on the metered daemon
// (its awaited calls: `beforeTransition`, `beforeStop`), which is what metering adds to the path itself.
//   node bench/lifecycle/metering.mjs [--iterations 21] [--cycles 3] [--execs 5] [--background 8] [--sample-ms 5000]
// As root; needs the packages built (npm run build). Run under the real-tests lock:
//   flock /tmp/ramify-real-tests.lock node bench/lifecycle/metering.mjs
import { parseArgs } from 'node:util';
import { Sandbox } from '@ramify/sdk';
import { startBenchDaemon } from '../support/in-process-daemon.mjs';
import { ratioTarget, time as timed, upperMedian } from '../support/stats.mjs';

const { values } = parseArgs({ options: { iterations: { type: 'string', default: '21' }, background: { type: 'string', default: '8' }, execs: { type: 'string', default: '5' }, cycles: { type: 'string', default: '3' }, 'sample-ms': { type: 'string', default: '5000' } } });
const N = Number(values.iterations);
const BACKGROUND = Number(values.background);
const EXECS = Number(values.execs);
const CYCLES = Number(values.cycles);
const SAMPLE_MS = Number(values['sample-ms']);
const TARGET = 1.05;
const OPS = ['create', 'exec', 'pause'];

// Two identical daemons, both built with the sampler; each round one is metered and the other not
// (`usageSampleMs` is read live: 0 turns its meter off), swapping every round, so a difference between
// the daemons themselves (their prefixes, slots, tables) cancels out instead of passing for metering's.
const daemons = {
  a: await startBenchDaemon({ prefix: 'rbu', name: 'metering-a', options: { coreOptions: { usageSampleMs: SAMPLE_MS } } }),
  b: await startBenchDaemon({ prefix: 'rbv', name: 'metering-b', options: { coreOptions: { usageSampleMs: SAMPLE_MS } } }),
};
const conn = (d) => ({ apiUrl: d.server.url, apiKey: d.key, requestTimeoutMs: 600_000 });
const meter = (which, on) => { daemons[which].server.core.options.usageSampleMs = on ? SAMPLE_MS : 0; };

// The meter's awaited calls, timed: what metering puts on an operation's path.
let meterMs = 0;
for (const d of Object.values(daemons)) {
  const m = d.server.core.meter;
  for (const name of ['beforeTransition', 'beforeStop']) {
    const original = m[name].bind(m);
    m[name] = async (...args) => {
      const t = performance.now();
      try {
        return await original(...args);
      } finally {
        meterMs += performance.now() - t;
      }
    };
  }
}

/** Time `fn`, and the meter's time inside it. */
async function time(fn) {
  meterMs = 0;
  const [ms, r] = await timed(fn);
  return [ms, r, meterMs];
}

/** --cycles times a create, --execs execs, a pause and a kill on daemon `which`: per operation, [ms, meter ms] samples. */
async function round(which) {
  const c = conn(daemons[which]);
  const out = { create: [], exec: [], pause: [] };
  for (let k = 0; k < CYCLES; k++) {
    const [tc, sbx, mc] = await time(() => Sandbox.create({ ...c, template: 'base', timeoutMs: 600_000 }));
    out.create.push([tc, mc]);
    for (let e = 0; e < EXECS; e++) {
      const [te, , me] = await time(() => sbx.commands.run('true'));
      out.exec.push([te, me]);
    }
    const [tp, , mp] = await time(() => sbx.pause());
    out.pause.push([tp, mp]);
    await sbx.kill();
  }
  return out;
}

const results = { off: { create: [], exec: [], pause: [] }, on: { create: [], exec: [], pause: [] } };
const paired = { create: [], exec: [], pause: [] };
const meterTime = { create: [], exec: [], pause: [] };
try {
  for (const which of ['a', 'b']) {
    await Promise.all(Array.from({ length: BACKGROUND }, () => Sandbox.create({ ...conn(daemons[which]), template: 'base', timeoutMs: 3_600_000 })));
  }
  // A warm-up round each (first-use costs), not counted.
  await round('a');
  await round('b');
  for (let i = 0; i < N; i++) {
    // Metered: a, b, a, b, ...; first: a, a, b, b, ... (every combination as often).
    const on = i % 2 === 0 ? 'a' : 'b';
    meter(on, true);
    meter(on === 'a' ? 'b' : 'a', false);
    const pair = {};
    for (const which of Math.floor(i / 2) % 2 === 0 ? ['a', 'b'] : ['b', 'a']) pair[which === on ? 'on' : 'off'] = await round(which);
    for (const op of OPS) {
      results.off[op].push(...pair.off[op].map(([ms]) => ms));
      results.on[op].push(...pair.on[op].map(([ms]) => ms));
      meterTime[op].push(...pair.on[op].map(([, m]) => m));
      paired[op].push(upperMedian(pair.on[op].map(([ms]) => ms)) / upperMedian(pair.off[op].map(([ms]) => ms)));
    }
  }
  const sampled = await daemons.a.call('GET', '/v1/usage?groupBy=team');
  console.log(`bench/lifecycle/metering: gVisor, ${N} rounds (each ${CYCLES} x create, ${EXECS} execs, pause), ${BACKGROUND} idle sandboxes per daemon, sampler every ${SAMPLE_MS} ms on one daemon, off on the other (swapped every round); ms`);
  console.log(['operation', 'on (median)', 'off (median)', 'paired on/off (median)', 'target', 'ratio of medians', 'meter in the path (median)'].join('\t'));
  for (const op of OPS) {
    const ratio = upperMedian(paired[op]);
    const own = upperMedian(meterTime[op]);
    console.log([
      op, upperMedian(results.on[op]).toFixed(1), upperMedian(results.off[op]).toFixed(1), `${ratio.toFixed(3)}x`, ratioTarget(ratio, TARGET),
      `${(upperMedian(results.on[op]) / upperMedian(results.off[op])).toFixed(3)}x`, `${own.toFixed(2)} ms (${((own / upperMedian(results.on[op])) * 100).toFixed(2)} %)`,
    ].join('\t'));
  }
  const team = sampled.json.rows[0];
  console.log(`(daemon a, metered half the time, counted ${team?.sandboxes ?? 0} sandboxes, ${team?.cpuSeconds?.toFixed(1) ?? 0} CPU-seconds, ${team?.runningSeconds?.toFixed(0) ?? 0} running seconds)`);
} finally {
  await daemons.a.stop();
  await daemons.b.stop();
}
