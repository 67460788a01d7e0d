#!/usr/bin/env node
// bench/lifecycle/metering: what metering adds to create, exec and pause. Two gVisor daemons in this
// process on the same template image, one with the usage sampler on (every --sample-ms, the default 5000,
// its state-change writes and counter readings before each checkpoint and kill) and one with it off
// (`usageSampleMs: 0`: nothing read or written), each holding --background idle sandboxes for the sampler
// to read. Iterations alternate between the two (and which goes first), so both see the same machine.
// Prints each median and the ratio on/off, with the target (<= 1.05) marked ok or MISSED.
//   node bench/lifecycle/metering.mjs [--iterations 21] [--execs 5] [--background 8] [--sample-ms 5000]
// As root; needs the packages built (npm run build). Run under the real-tests lock:
//   flock /tmp/ramify-real-tests.lock node bench/lifecycle/metering.mjs
import { parseArgs } from 'node:util';
import { Sandbox } from '@ramify/sdk';
import { startBenchDaemon } from '../support/in-process-daemon.mjs';

const { values } = parseArgs({ options: { iterations: { type: 'string', default: '21' }, background: { type: 'string', default: '8' }, execs: { type: 'string', default: '5' }, 'sample-ms': { type: 'string', default: '5000' } } });
const N = Number(values.iterations);
const BACKGROUND = Number(values.background);
const EXECS = Number(values.execs);
const SAMPLE_MS = Number(values['sample-ms']);
const TARGET = 1.05;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = async (fn) => { const t = performance.now(); const r = await fn(); return [performance.now() - t, r]; };

const daemons = {
  off: await startBenchDaemon({ prefix: 'rbv', name: 'metering-off', options: { coreOptions: { usageSampleMs: 0 } } }),
  on: await startBenchDaemon({ prefix: 'rbu', name: 'metering-on', options: { coreOptions: { usageSampleMs: SAMPLE_MS } } }),
};
const conn = (d) => ({ apiUrl: d.server.url, apiKey: d.key, requestTimeoutMs: 600_000 });
const results = { off: { create: [], exec: [], pause: [] }, on: { create: [], exec: [], pause: [] } };

/** One create, --execs execs, a pause and a kill on daemon `which`. */
async function round(which) {
  const c = conn(daemons[which]);
  const [tc, sbx] = await time(() => Sandbox.create({ ...c, template: 'base', timeoutMs: 600_000 }));
  results[which].create.push(tc);
  for (let e = 0; e < EXECS; e++) results[which].exec.push((await time(() => sbx.commands.run('true')))[0]);
  results[which].pause.push((await time(() => sbx.pause()))[0]);
  await sbx.kill();
}

try {
  for (const which of ['off', 'on']) {
    await Promise.all(Array.from({ length: BACKGROUND }, () => Sandbox.create({ ...conn(daemons[which]), template: 'base', timeoutMs: 3_600_000 })));
  }
  // A warm-up round each (first-use costs), not counted.
  await round('off');
  await round('on');
  for (const which of ['off', 'on']) for (const k of Object.keys(results[which])) results[which][k].length = 0;
  for (let i = 0; i < N; i++) {
    for (const which of i % 2 === 0 ? ['off', 'on'] : ['on', 'off']) await round(which);
  }
  const sampled = await daemons.on.call('GET', '/v1/usage?groupBy=team');
  console.log(`bench/lifecycle/metering: gVisor, ${N} iterations each (${EXECS} execs in each), ${BACKGROUND} idle sandboxes per daemon, sampler every ${SAMPLE_MS} ms on one daemon, off on the other; medians in ms`);
  console.log(['operation', 'metering on', 'metering off', 'ratio', 'target'].join('\t'));
  for (const op of ['create', 'exec', 'pause']) {
    const ratio = median(results.on[op]) / median(results.off[op]);
    console.log([op, median(results.on[op]).toFixed(1), median(results.off[op]).toFixed(1), `${ratio.toFixed(3)}x`, `<= ${TARGET}x ${ratio <= TARGET ? 'ok' : 'MISSED'}`].join('\t'));
  }
  const team = sampled.json.rows[0];
  console.log(`(the metered daemon counted ${team?.sandboxes ?? 0} sandboxes, ${team?.cpuSeconds?.toFixed(1) ?? 0} CPU-seconds, ${team?.runningSeconds?.toFixed(0) ?? 0} running seconds)`);
} finally {
  await daemons.on.stop();
  await daemons.off.stop();
}
