/**
 * What crosses between the daemon's main thread and the ingress's thread (docs/design/INGRESS.md,
 * "Where the ingress runs"). Three ways:
 * - **routes** (main → ingress, a `MessagePort` of their own): {@link RouteUpdate}s, one per change of a
 *   sandbox's route, each followed by a bump of a shared counter ({@link RouteVersion}), so the ingress
 *   applies every update posted before a request arrived before it serves it (it drains the port
 *   synchronously when the counter is ahead);
 * - **asks** (ingress → main, answered): what needs core: a wake (the request is held until the answer),
 *   a lookup the route cache cannot answer, what listens on a port;
 * - **activity** (ingress → main, one-way batches): holds opened and released, and ingress log entries.
 * Plus the main thread's control calls (drop a sandbox's connections, flush, count, close). Everything is
 * structured-clone data; errors travel as {@link WireError}.
 */
import { isRamifyError, RamifyError, type ErrorCode } from '@ramify/contracts';
import type { MessagePort } from 'node:worker_threads';
import type { IngressRoute, IngressLogRecord } from '@ramify/core';
import type { IngressTargetInfo, UpstreamConnections } from '../ingress-server.js';
import type { UpstreamPoolOptions } from '../upstream-pool.js';

/** How the ingress's thread is set up (its `workerData`). */
export interface IngressWorkerData {
  domain: string;
  tls: { cert: string | Uint8Array; key: string | Uint8Array } | null;
  /** uid of the dialer helper the thread starts (the one uid the ingress firewall lets reach slots). */
  dialerUid: number;
  listen: { host: string; port: number };
  wakeConnectRetryMs: number | null;
  pool: Omit<UpstreamPoolOptions, 'dial'> | null;
  /** Holds released and log entries wait at most this long before they are sent to the main thread, ms. */
  activityFlushMs: number;
  /** The receiving end of the routes channel (transferred). */
  routes: MessagePort;
  /** {@link RouteVersion}'s buffer. */
  routesVersion: SharedArrayBuffer;
}

/**
 * The count of route updates posted (an `Int32Array` of one over a `SharedArrayBuffer`): the main thread
 * adds one after each post, the ingress compares it with the count it applied.
 */
export type RouteVersion = Int32Array;

/** A sandbox's route set (added or replaced) or removed (killed: requests then ask the main thread). */
export type RouteUpdate = { kind: 'set'; route: IngressRoute } | { kind: 'delete'; sandboxId: string };

/** A RamifyError (or any error) as data. */
export interface WireError {
  message: string;
  /** A RamifyError's code, or a system error's (`EADDRINUSE`). */
  code?: string;
  details?: Record<string, unknown>;
  ramify: boolean;
}

/** Holds opened and released per sandbox since the last batch, and the finished requests' log entries. */
export interface ActivityBatchMessage {
  kind: 'activity';
  opened: Array<[sandboxId: string, count: number]>;
  released: Array<[sandboxId: string, count: number]>;
  logs: IngressLogRecord[];
}

/** What the ingress asks of the main thread, and what each answers. */
export interface Asks {
  target: { args: { sandboxId: string; port: number }; result: IngressTargetInfo };
  running: { args: { sandboxId: string; placement?: string }; result: { slotAddress: string; woke: boolean } };
  listeners: { args: { sandboxId: string; port: number }; result: 'none' | 'loopback-only' | 'reachable' };
}

/** The main thread's control calls, and what each answers. */
export interface Controls {
  drop: { args: { sandboxId: string }; result: UpstreamConnections };
  connections: { args: { sandboxId: string }; result: UpstreamConnections };
  /** Send the pending activity now (it arrives before the answer). */
  flush: { args: Record<string, never>; result: null };
  /** Stop listening, close every connection, send the last activity. */
  close: { args: Record<string, never>; result: null };
}

/** A call (an ask or a control) and its answer. */
export type CallMessage<M> = { [K in keyof M]: { kind: 'call'; id: number; name: K; args: M[K] extends { args: infer A } ? A : never } }[keyof M];
export type AnswerMessage = { kind: 'answer'; id: number; ok: true; value: unknown } | { kind: 'answer'; id: number; ok: false; error: WireError };

/** Ingress → main. */
export type FromIngress =
  | { kind: 'listening'; address: string; port: number; protocol: 'http' | 'https' }
  | { kind: 'failed'; error: WireError }
  | { kind: 'problem'; message: string; context: { sandboxId?: string; port?: number } }
  | ActivityBatchMessage
  | CallMessage<Asks>
  | AnswerMessage;

/** Main → ingress (besides the routes port). */
export type ToIngress = CallMessage<Controls> | AnswerMessage;

/** `err` as data. */
export function toWire(err: unknown): WireError {
  if (isRamifyError(err)) return { message: err.message, code: err.code, ...(err.details ? { details: err.details } : {}), ramify: true };
  const code = (err as { code?: unknown } | null)?.code;
  return { message: err instanceof Error ? err.message : String(err), ...(typeof code === 'string' ? { code } : {}), ramify: false };
}

/** The error `wire` describes: a RamifyError again, or an Error with its `code`. */
export function fromWire(wire: WireError): Error {
  if (wire.ramify && wire.code) return new RamifyError(wire.code as ErrorCode, wire.message, wire.details);
  return Object.assign(new Error(wire.message), wire.code ? { code: wire.code } : {});
}

/**
 * Calls in flight on one side, by id: {@link open} gives the id and the answer's promise, {@link settle}
 * resolves it from an {@link AnswerMessage}, {@link failAll} rejects the rest (the other side is gone).
 */
export class PendingCalls {
  private next = 1;
  private readonly waiting = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();

  open<T>(): { id: number; answer: Promise<T> } {
    const id = this.next++;
    const answer = new Promise<T>((resolve, reject) => this.waiting.set(id, { resolve: resolve as (value: unknown) => void, reject }));
    return { id, answer };
  }

  settle(message: AnswerMessage): void {
    const waiting = this.waiting.get(message.id);
    if (!waiting) return;
    this.waiting.delete(message.id);
    if (message.ok) waiting.resolve(message.value);
    else waiting.reject(fromWire(message.error));
  }

  failAll(err: Error): void {
    for (const waiting of this.waiting.values()) waiting.reject(err);
    this.waiting.clear();
  }
}

/** Answer call `id` with what `work` resolves to (or its error) through `post`. */
export function answer(id: number, work: () => Promise<unknown>, post: (message: AnswerMessage) => void): void {
  new Promise((resolve) => resolve(work())).then(
    (value) => post({ kind: 'answer', id, ok: true, value }),
    (err: unknown) => post({ kind: 'answer', id, ok: false, error: toWire(err) }),
  );
}
