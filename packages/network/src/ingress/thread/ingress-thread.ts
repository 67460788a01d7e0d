/**
 * `IngressThread`: the ingress served from a thread of its own (`node:worker_threads`), seen from the
 * daemon's main thread. The thread (./ingress-worker.ts) runs the listener, the upstream pool and its own
 * dialer on its own event loop, and serves most requests from a route cache; this side keeps that cache in
 * step ({@link IngressThread.setRoute}, {@link IngressThread.deleteRoute}: the caller pushes every change
 * before acknowledging it), answers what the thread asks of core through an {@link IngressBackend} (the
 * same interface the in-process `IngressServer` uses: a lookup the cache cannot answer, a wake, a listener
 * diagnosis), and applies the thread's batches of holds and log entries to it.
 *
 * Why a thread and not a process: it shares the daemon's uid and network namespace, so its dialer helper
 * and the ingress firewall work as they do for the in-process server, and crossing is a `postMessage`
 * within one process (structured clone, no pipe, no JSON). See docs/design/INGRESS.md, "Where the ingress runs".
 *
 * A thread that dies is started again (after 1 s, on the port it had, with every route) and logged; the
 * holds it had open are released. Lifecycle: `new` → `ready` → push routes, drop connections, flush any
 * number of times → `close()`.
 */
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { IngressRoute } from '@ramify/core';
import { DEFAULT_INGRESS_UID } from '../dialer.js';
import type { IngressBackend, UpstreamConnections } from '../ingress-server.js';
import type { UpstreamPoolOptions } from '../upstream-pool.js';
import { answer, fromWire, PendingCalls, type ActivityBatchMessage, type Asks, type CallMessage, type Controls, type FromIngress, type IngressWorkerData, type RouteUpdate, type ToIngress } from './protocol.js';

export interface IngressThreadOptions {
  /** Asked for what needs core (a lookup the route cache cannot answer, a wake, listeners); given holds and log entries. */
  backend: IngressBackend;
  /** The ingress domain (`localhost`). */
  domain: string;
  /** Where to listen (port 0 picks a free one). */
  listen: { host: string; port: number };
  /** TLS certificate and key (PEM): serve HTTPS. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** uid of the thread's dialer helper; default {@link DEFAULT_INGRESS_UID}. */
  dialerUid?: number;
  /** As `IngressServerOptions.wakeConnectRetryMs`. */
  wakeConnectRetryMs?: number;
  /** As `IngressServerOptions.pool`. */
  pool?: Omit<UpstreamPoolOptions, 'dial'>;
  /** Releases and log entries reach the backend within this long, ms; default 100 (a hold on an idle sandbox at once). */
  activityFlushMs?: number;
  /** Failures worth a log line (never with a token): failed requests, and the thread's own trouble. */
  onError?: (err: unknown, context: { sandboxId?: string; port?: number }) => void;
}

/** One running thread and what belongs to it. */
interface Incarnation {
  worker: Worker;
  routes: MessagePort;
  version: Int32Array;
  controls: PendingCalls;
  /** It listened (a thread that never did is not started again: its port is taken, its TLS files bad...). */
  listened: boolean;
  exited: boolean;
  /** Settled once the thread listens (or failed to). */
  ready: Promise<{ address: string; port: number }>;
}

const RESTART_DELAY_MS = 1000;
/** How long {@link IngressThread.close} waits for the thread to close its connections before it stops it. */
const CLOSE_TIMEOUT_MS = 5000;

export class IngressThread {
  /** The address and port listened on (as bound: port 0 resolved), once the thread listens. Rejects with the listen error. */
  readonly ready: Promise<{ address: string; port: number }>;
  readonly protocol: 'http' | 'https';
  private readonly options: IngressThreadOptions;
  /** Every route pushed (replayed into a restarted thread). */
  private readonly routes = new Map<string, IngressRoute>();
  /** Holds the thread has open, per sandbox: the backend's release functions. */
  private readonly holds = new Map<string, Array<() => void>>();
  private current: Incarnation;
  private boundPort = 0;
  private closed = false;

  constructor(options: IngressThreadOptions) {
    this.options = options;
    this.protocol = options.tls ? 'https' : 'http';
    this.current = this.spawn(options.listen.port);
    this.ready = this.current.ready.then((bound) => {
      this.boundPort = bound.port;
      return bound;
    });
  }

  /** Add or replace the route of `route.sandboxId`: in force for every request the thread reads after this call. */
  setRoute(route: IngressRoute): void {
    this.routes.set(route.sandboxId, route);
    this.postRoute(this.current, { kind: 'set', route });
  }

  /** Remove a sandbox's route (killed): its requests ask the backend (410), its pool is retired. */
  deleteRoute(sandboxId: string): void {
    if (!this.routes.delete(sandboxId)) return;
    this.postRoute(this.current, { kind: 'delete', sandboxId });
  }

  /** As `IngressServer.dropConnections`, in the thread (before a checkpoint). Resolves with zeros when the thread is down. */
  dropConnections(sandboxId: string): Promise<UpstreamConnections> {
    return this.control('drop', { sandboxId }, { open: 0, idle: 0 });
  }

  /** As `IngressServer.connectionsInto`, in the thread. */
  connectionsInto(sandboxId: string): Promise<UpstreamConnections> {
    return this.control('connections', { sandboxId }, { open: 0, idle: 0 });
  }

  /** Resolves once every hold and log entry the thread had pending has reached the backend. */
  async flush(): Promise<void> {
    await this.control('flush', {}, null);
  }

  /**
   * Stop listening and close every connection; the last holds and log entries reach the backend, then the
   * thread ends (stopped after 5 s if it has not closed by then).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const { worker } = this.current;
    // A connection that will not close (an upgraded socket nobody ends) must not hold the daemon's shutdown.
    let timer: NodeJS.Timeout | undefined;
    const givenUp = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), CLOSE_TIMEOUT_MS)));
    await Promise.race([this.control('close', {}, null), givenUp]);
    clearTimeout(timer);
    await worker.terminate();
    this.releaseAll();
  }

  private spawn(port: number): Incarnation {
    const { options } = this;
    const channel = new MessageChannel();
    const buffer = new SharedArrayBuffer(4);
    const data: IngressWorkerData = {
      domain: options.domain,
      tls: options.tls ? { cert: options.tls.cert, key: options.tls.key } : null,
      dialerUid: options.dialerUid ?? DEFAULT_INGRESS_UID,
      listen: { host: options.listen.host, port },
      wakeConnectRetryMs: options.wakeConnectRetryMs ?? null,
      pool: options.pool ?? null,
      activityFlushMs: options.activityFlushMs ?? 100,
      routes: channel.port2,
      routesVersion: buffer,
    };
    const worker = new Worker(new URL('./ingress-worker.js', import.meta.url), { workerData: data, transferList: [channel.port2] });
    let settle: { resolve: (bound: { address: string; port: number }) => void; reject: (err: Error) => void } | undefined;
    const ready = new Promise<{ address: string; port: number }>((resolve, reject) => (settle = { resolve, reject }));
    const incarnation: Incarnation = { worker, routes: channel.port1, version: new Int32Array(buffer), controls: new PendingCalls(), listened: false, exited: false, ready };
    for (const route of this.routes.values()) this.postRoute(incarnation, { kind: 'set', route });
    worker.on('message', (message: FromIngress) => {
      if (message.kind === 'listening') {
        incarnation.listened = true;
        settle?.resolve({ address: message.address, port: message.port });
      } else if (message.kind === 'failed') {
        settle?.reject(fromWire(message.error));
        void worker.terminate();
      } else this.onMessage(incarnation, message);
    });
    worker.on('error', (err) => options.onError?.(err, {}));
    worker.on('exit', (code) => {
      incarnation.exited = true;
      settle?.reject(new Error(`the ingress thread exited (code ${code}) before it listened`));
      incarnation.controls.failAll(new Error('the ingress thread exited'));
      channel.port1.close();
      if (this.current !== incarnation) return;
      this.releaseAll();
      // A restarted thread that could not listen is tried again; a first one that could not is the caller's error.
      if (!this.closed && (incarnation.listened || this.boundPort !== 0)) this.restart(code);
    });
    return incarnation;
  }

  private restart(code: number): void {
    this.options.onError?.(new Error(`the ingress thread stopped (exit code ${code}); starting it again in ${RESTART_DELAY_MS} ms`), {});
    setTimeout(() => {
      if (this.closed) return;
      this.current = this.spawn(this.boundPort);
      this.current.ready.catch((err: unknown) => this.options.onError?.(err, {}));
    }, RESTART_DELAY_MS).unref();
  }

  private postRoute(incarnation: Incarnation, update: RouteUpdate): void {
    incarnation.routes.postMessage(update);
    // After the post: the thread that sees the new count finds the update on its port.
    Atomics.add(incarnation.version, 0, 1);
  }

  private onMessage(incarnation: Incarnation, message: Exclude<FromIngress, { kind: 'listening' | 'failed' }>): void {
    switch (message.kind) {
      case 'activity':
        if (this.current === incarnation) this.applyActivity(message);
        return;
      case 'problem':
        this.options.onError?.(new Error(message.message), message.context);
        return;
      case 'answer':
        incarnation.controls.settle(message);
        return;
      case 'call':
        answer(message.id, () => this.ask(message), (reply) => incarnation.worker.postMessage(reply));
        return;
    }
  }

  private ask(call: CallMessage<Asks>): Promise<unknown> {
    const { backend } = this.options;
    switch (call.name) {
      case 'target':
        return backend.target(call.args.sandboxId, call.args.port);
      case 'running':
        return backend.running(call.args.sandboxId, call.args.placement);
      case 'listeners':
        return backend.listeners(call.args.sandboxId, call.args.port);
    }
  }

  /** Opens first, then releases: a request that came and went within one batch still touches its sandbox. */
  private applyActivity(batch: ActivityBatchMessage): void {
    const { backend } = this.options;
    for (const [sandboxId, count] of batch.opened) {
      let open = this.holds.get(sandboxId);
      if (!open) this.holds.set(sandboxId, (open = []));
      for (let i = 0; i < count; i++) open.push(backend.hold(sandboxId));
    }
    for (const [sandboxId, count] of batch.released) {
      const open = this.holds.get(sandboxId);
      for (let i = 0; i < count; i++) open?.pop()?.();
      if (open?.length === 0) this.holds.delete(sandboxId);
    }
    for (const entry of batch.logs) backend.log(entry);
  }

  private releaseAll(): void {
    for (const open of this.holds.values()) for (const release of open) release();
    this.holds.clear();
  }

  /** A control call to the current thread; `fallback` when it is down (restarting) or gone. */
  private async control<K extends keyof Controls>(name: K, args: Controls[K]['args'], fallback: Controls[K]['result']): Promise<Controls[K]['result']> {
    const incarnation = this.current;
    if (incarnation.exited) return fallback;
    const { id, answer: result } = incarnation.controls.open<Controls[K]['result']>();
    incarnation.worker.postMessage({ kind: 'call', id, name, args } as ToIngress);
    return result.catch(() => fallback);
  }
}
