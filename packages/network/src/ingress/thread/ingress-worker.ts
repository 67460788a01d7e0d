/**
 * The ingress's thread: the entry of the `node:worker_threads` Worker that {@link IngressThread} starts.
 * It runs the whole per-request path on an event loop of its own, away from the daemon's (API, timers,
 * SQLite, agent channels): the listener (`IngressServer`: Host, token, proxying, the upstream pool), its
 * own dialer helper (the ingress uid's connections), and a {@link RouteTable} that answers the lookup of
 * almost every request. Only what needs core goes to the main thread (protocol.ts): wakes, lookups the
 * cache cannot answer, listener diagnoses; holds and log entries go in batches ({@link ActivityBatch}).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { IngressDialer } from '../dialer.js';
import { IngressServer, type IngressBackend } from '../ingress-server.js';
import { ActivityBatch } from './activity-batch.js';
import { answer, PendingCalls, toWire, type Asks, type CallMessage, type Controls, type FromIngress, type IngressWorkerData, type ToIngress } from './protocol.js';
import { RouteTable } from './route-table.js';

const data = workerData as IngressWorkerData;
const main = parentPort;
if (!main) throw new Error('ingress-worker.js runs as a worker thread (started by IngressThread)');
const post = (message: FromIngress): void => main.postMessage(message);

const asks = new PendingCalls();
function ask<K extends keyof Asks>(name: K, args: Asks[K]['args']): Promise<Asks[K]['result']> {
  const { id, answer: result } = asks.open<Asks[K]['result']>();
  post({ kind: 'call', id, name, args } as CallMessage<Asks>);
  return result;
}

let server: IngressServer | null = null;
const routes = new RouteTable(data.routes, new Int32Array(data.routesVersion), (sandboxId, state) => server?.sandboxState(sandboxId, state));
const activity = new ActivityBatch(post, data.activityFlushMs);
const backend: IngressBackend = {
  target: async (sandboxId, port) => {
    const cached = routes.target(sandboxId, port);
    return cached === 'ask' ? ask('target', { sandboxId, port }) : cached;
  },
  running: (sandboxId, placement) => ask('running', { sandboxId, ...(placement !== undefined ? { placement } : {}) }),
  listeners: (sandboxId, port) => ask('listeners', { sandboxId, port }),
  hold: (sandboxId) => activity.hold(sandboxId),
  log: (entry) => activity.log(entry),
};
const dialer = new IngressDialer({ uid: data.dialerUid });
const ingress = new IngressServer({
  backend,
  dialer,
  domain: data.domain,
  ...(data.tls ? { tls: { cert: Buffer.from(data.tls.cert), key: Buffer.from(data.tls.key) } } : {}),
  ...(data.wakeConnectRetryMs !== null ? { wakeConnectRetryMs: data.wakeConnectRetryMs } : {}),
  ...(data.pool ? { pool: data.pool } : {}),
  onError: (err, context) => post({ kind: 'problem', message: err instanceof Error ? err.message : String(err), context }),
});
server = ingress;

async function control(call: CallMessage<Controls>): Promise<unknown> {
  switch (call.name) {
    case 'drop':
      return ingress.dropConnections(call.args.sandboxId);
    case 'connections':
      return ingress.connectionsInto(call.args.sandboxId);
    case 'flush':
      activity.flush();
      return null;
    case 'close':
      await ingress.close();
      dialer.close();
      activity.flush();
      return null;
  }
}

main.on('message', (message: ToIngress) => {
  if (message.kind === 'answer') asks.settle(message);
  else answer(message.id, () => control(message), (reply) => main.postMessage(reply));
});

dialer.start();
ingress.listen(data.listen.host, data.listen.port).then(
  (bound) => post({ kind: 'listening', address: bound.address, port: bound.port, protocol: ingress.protocol }),
  (err: unknown) => post({ kind: 'failed', error: toWire(err) }),
);
