// bench/support/observability-rig.mjs: what bench/lifecycle/observability.mjs (gVisor) and
// bench/lifecycle/observability-cpu.mjs (the fake runtime) share: the loopback sinks standing in for the
// webhook receiver and the OTLP collector, the daemon options with every observability feature off, one
// sandbox's timed life and the ABBA order of a pair. The design: docs/design/EVENTS.md, "Cost (bench)".
import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { Sandbox } from '@ramify/sdk';
import { median, time } from './stats.mjs';

/** Daemon options (`serve`'s) with metrics, events (so webhooks) and the usage meter off; traces are off unless configured. */
export const OBSERVABILITY_OFF = { metrics: 'off', coreOptions: { events: 'off', usageSampleMs: 0 } };

/**
 * A loopback HTTP server on 127.0.0.1 and a free port answering 200 to every request once its body is
 * read; counts the requests. Returns `{ url, count(), close() }` (`close` drops open connections).
 * Rejects when it cannot listen.
 */
export async function startSink() {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count += 1;
      res.writeHead(200).end();
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return { url: `http://127.0.0.1:${server.address().port}`, count: () => count, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }) };
}

/**
 * One sandbox's life on the daemon `conn` (the SDK's connection options): create from template `base`,
 * `execs` times `commands.run('true')`, pause, kill, then `settleMs` of quiet (so the daemon's deferred
 * work lands before the next life). Returns `{ create, exec, pause }`, ms (`exec`: the median of the execs).
 * Rejects with the SDK's error when an operation fails.
 */
export async function sandboxLife(conn, { execs, settleMs }) {
  const [create, sbx] = await time(() => Sandbox.create({ ...conn, template: 'base', timeoutMs: 600_000 }));
  const times = [];
  for (let e = 0; e < execs; e++) times.push((await time(() => sbx.commands.run('true')))[0]);
  const [pause] = await time(() => sbx.pause());
  await sbx.kill();
  await sleep(settleMs);
  return { create, exec: median(times), pause };
}

/**
 * Pair `i` of an ABBA sequence (on first in pairs 0, 3, 4, 7, 8, ...; off first in 1, 2, 5, 6, ...):
 * runs `on()` and `off()` in that pair's order, one after the other. Returns `{ on, off }`, their results.
 */
export async function abbaPair(i, on, off) {
  const pair = {};
  if (i % 4 === 0 || i % 4 === 3) { pair.on = await on(); pair.off = await off(); }
  else { pair.off = await off(); pair.on = await on(); }
  return pair;
}
