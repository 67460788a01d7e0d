/**
 * `RouteTable`: the ingress thread's cache of routes (core's `IngressRoute`, one per live sandbox), fed by
 * the main thread's {@link RouteUpdate}s. {@link RouteTable.target} answers a request from it when it can
 * (most requests: a running sandbox, an exposed port, a known token verifier) and says `ask` when core must
 * (no route: an unknown or killed sandbox; a token port whose verifier is not known yet).
 *
 * Ordering: before every lookup the table compares the main thread's count of updates posted (a shared
 * counter) with its own count applied and, when behind, drains the routes port synchronously
 * (`receiveMessageOnPort`). So a change the main thread posted before it acknowledged an API call (an
 * unexpose, a kill) is in force for every request that arrives after: no stale route is ever served.
 */
import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { exposedAccess, type IngressRoute } from '@ramify/core';
import type { SandboxState } from '@ramify/contracts';
import type { IngressTargetInfo } from '../ingress-server.js';
import type { RouteUpdate, RouteVersion } from './protocol.js';

export class RouteTable {
  private readonly routes = new Map<string, IngressRoute>();
  private applied = 0;

  /**
   * @param port the routes port (updates also arrive through its `message` event)
   * @param version the main thread's count of updates posted
   * @param onState a sandbox's state changed (or it was removed: `killed`); the ingress's pool follows it
   */
  constructor(
    private readonly port: MessagePort,
    private readonly version: RouteVersion,
    private readonly onState: (sandboxId: string, state: SandboxState) => void,
  ) {
    port.on('message', (update: RouteUpdate) => this.apply(update));
  }

  /**
   * The port's access, verifier and slot address from the cache, or `ask` (the main thread must answer).
   * @throws RamifyError `SANDBOX_KILLED`, `PORT_NOT_EXPOSED` (the same check as core's `ingressTarget`).
   */
  target(sandboxId: string, port: number): IngressTargetInfo | 'ask' {
    this.catchUp();
    const route = this.routes.get(sandboxId);
    if (!route) return 'ask';
    const access = exposedAccess(sandboxId, route.state, route.ports, port);
    if (access === 'token' && route.tokenVerifier === null) return 'ask';
    return { access, tokenVerifier: access === 'token' ? route.tokenVerifier : null, slotAddress: route.state === 'running' ? route.slotAddress : null };
  }

  /** How many routes are held. */
  get size(): number {
    this.catchUp();
    return this.routes.size;
  }

  /** Apply every update posted so far. */
  catchUp(): void {
    if (Atomics.load(this.version, 0) === this.applied) return;
    for (let m = receiveMessageOnPort(this.port); m; m = receiveMessageOnPort(this.port)) this.apply(m.message as RouteUpdate);
  }

  private apply(update: RouteUpdate): void {
    this.applied = (this.applied + 1) | 0; // wraps as the Int32 counter does
    if (update.kind === 'delete') {
      if (this.routes.delete(update.sandboxId)) this.onState(update.sandboxId, 'killed');
      return;
    }
    const { route } = update;
    const before = this.routes.get(route.sandboxId);
    this.routes.set(route.sandboxId, route);
    if (before?.state !== route.state) this.onState(route.sandboxId, route.state);
  }
}
