#!/usr/bin/env node
// bench/events/delivery-cost.mjs: what one webhook delivery costs the daemon's main thread, the cost the
// observability bench (bench/lifecycle/observability.mjs) sees when a delivery lands on a caller's call.
// Core's dispatcher, the daemon's sender and the real SQLite store in this process; the receiver (answers
// 200) in a child process, so its work is not counted. Events go out in bursts of 3 (a create, a pause and
// a kill make one each), one burst at a time. Prints, per delivery: event-loop busy time and CPU time of
// this process, SQLite statements (counted at better-sqlite3, begin/commit included) and the connections
// the receiver accepted; and, as the raw mechanism in the same run, the same for bare POSTs of the same
// body on a new connection each (`agent: false`). No target: the figures behind docs/design/EVENTS.md's
// cost section. No runtime, so no lock: node bench/events/delivery-cost.mjs [--deliveries 600]
import { fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { EventHub, WebhookDispatcher, silentLogger, systemClock } from '@ramify/core';
import { SqliteStore } from '../../packages/store/dist/index.js';
import { createWebhookSender } from '../../packages/daemon/dist/observability/webhook-sender.js';

const { values } = parseArgs({ options: { deliveries: { type: 'string', default: '600' }, child: { type: 'boolean', default: false } } });
if (values.child) {
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => { req.resume(); req.on('end', () => res.writeHead(200).end()); });
  let connections = 0;
  server.on('connection', () => { connections += 1; });
  server.listen(0, '127.0.0.1', () => process.send(server.address().port));
  process.on('message', () => process.send({ connections }));
  process.on('disconnect', () => process.exit(0));
} else {
  const N = Math.ceil(Number(values.deliveries) / 3) * 3;
  const child = fork(new URL(import.meta.url).pathname, ['--child'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise((resolve) => child.once('message', resolve));
  const connections = () => new Promise((resolve) => { child.once('message', (m) => resolve(m.connections)); child.send('connections?'); });
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const dir = await mkdtemp(join(tmpdir(), 'ramify-delivery-cost-'));
  const store = new SqliteStore({ path: join(dir, 'ramify.db') });
  let statements = 0;
  let counting = false;
  const prepare = store.db.prepare.bind(store.db);
  // Kysely prepares each SQL text once and keeps it: wrap the statement's run/all/get as it is made.
  store.db.prepare = (source) => {
    const stmt = prepare(source);
    for (const m of ['run', 'all', 'get', 'iterate']) {
      const f = stmt[m].bind(stmt);
      stmt[m] = (...args) => { if (counting) statements += 1; return f(...args); };
    }
    return stmt;
  };
  /** Run `fn` and return this process's event-loop busy and CPU time, ms, and the receiver's new connections. */
  const measure = async (fn) => {
    const before = await connections();
    const cpu0 = process.cpuUsage();
    const elu0 = performance.eventLoopUtilization();
    await fn();
    const cpu = process.cpuUsage(cpu0);
    const elu = performance.eventLoopUtilization(elu0);
    return { busyMs: elu.active, cpuMs: (cpu.user + cpu.system) / 1000, connections: (await connections()) - before };
  };
  const body = JSON.stringify({ id: 'evt_00000000_1', type: 'sandbox.lifecycle.created', data: { templateId: 'base' }, delivery: { attempt: 1 } });

  await store.insertWebhook({ id: 'whk_bench', teamId: 'default', name: 'bench', url: `http://127.0.0.1:${port}/hook`, events: ['sandbox.lifecycle.created'], secret: 'whsec_bench', createdAt: Date.now(), createdBy: null });
  const hub = new EventHub();
  const dispatcher = new WebhookDispatcher({ store, hub, holder: 'bench', sender: createWebhookSender({ allowPrivateDestinations: true }), logger: silentLogger, clock: systemClock });
  await dispatcher.start();
  const events = [];
  for (let i = 0; i < N + 3; i++) events.push(await store.appendEvent({ type: 'sandbox.lifecycle.created', at: Date.now(), teamId: 'default', sandboxId: 'sbx_bench', keyId: null, cause: 'api', data: { templateId: 'base' } }));
  /** Publish a burst of 3 and wait (polling a counter, not the store) until each is settled and recorded. */
  const burst = async (i) => {
    for (const e of events.slice(i, i + 3)) hub.publish(e);
    await sleep(1);
    while (dispatcher.queueSize() > 0) await sleep(2);
    await sleep(10); // Apart, as operations are.
  };
  await burst(0); // Warm-up.
  counting = true;
  const delivery = await measure(async () => { for (let i = 3; i < N + 3; i += 3) await burst(i); });
  counting = false;
  const perDelivery = statements / N;
  await dispatcher.close();
  const post = () => new Promise((resolve, reject) => {
    const req = request(`http://127.0.0.1:${port}/raw`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } }, (res) => { res.destroy(); resolve(); });
    req.once('error', reject);
    req.end(body);
  });
  const raw = await measure(async () => {
    for (let i = 0; i < N; i += 3) {
      await Promise.all([post(), post(), post()]);
      await sleep(10);
    }
  });
  store.db.close();
  await rm(dir, { recursive: true, force: true });
  child.kill();
  const row = (name, m, extra) => [name, (m.busyMs / N).toFixed(3), (m.cpuMs / N).toFixed(3), (m.connections / N).toFixed(2), extra].join('\t');
  console.log(`bench/events/delivery-cost: ${N} deliveries in bursts of 3, the receiver in another process; per delivery`);
  console.log(['', 'loop busy ms', 'cpu ms', 'connections', 'SQLite statements'].join('\t'));
  console.log(row('delivery', delivery, perDelivery.toFixed(2)));
  console.log(row('bare POST', raw, '0'));
}
