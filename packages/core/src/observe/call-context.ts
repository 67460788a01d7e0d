/**
 * The call context: who and what set the current work going, carried across awaits (AsyncLocalStorage)
 * so that what happens deep in a use-case (a state transition persisted, a command ending, a phase of a
 * restore) knows it without every function passing it on. The daemon's HTTP edge runs each authenticated
 * call in `{ cause: 'api', keyId }`; the timeout scheduler in `{ cause: 'timeout' }`, idle auto-pause in
 * `{ cause: 'idle' }`, a wake in `{ cause: 'wake' }`. Outside any: `{ cause: 'system', keyId: null }`.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { EventCause } from '@ramify/contracts';
import type { TelemetryOperation } from '../ports/telemetry.js';

export interface CallContext {
  /** The API key whose call this is; null when no key caused it. */
  keyId: string | null;
  cause: EventCause;
  /** The telemetry operation this work belongs to (phases and nested operations attach to it); null outside any. */
  operation: TelemetryOperation | null;
  /**
   * The lifecycle operation this work is part of and the sandbox it is about (`{ name: 'fork', sandboxId }`),
   * innermost first; null outside any. A fork's or snapshot's own pause and restore of its sandbox are
   * part of it, not pauses and resumes of their own (the event recorder reads this).
   */
  task: { name: string; sandboxId: string | null } | null;
}

const storage = new AsyncLocalStorage<CallContext>();
const SYSTEM: CallContext = { keyId: null, cause: 'system', operation: null, task: null };

/** The context of the running code ({@link SYSTEM} outside any). */
export function currentCallContext(): CallContext {
  return storage.getStore() ?? SYSTEM;
}

/** Run `fn` with the current context changed by `patch` (a cause given without a key clears the key). */
export function withCallContext<T>(patch: Partial<CallContext>, fn: () => T): T {
  const current = currentCallContext();
  const keyId = patch.keyId !== undefined ? patch.keyId : patch.cause !== undefined && patch.cause !== 'api' ? null : current.keyId;
  return storage.run({ ...current, ...patch, keyId }, fn);
}

/**
 * Run `fn` as new work caused by `cause` (no API key, no enclosing operation): the timeout scheduler,
 * auto-pause, a wake, a lost instance. Callbacks of long-lived resources (an agent channel opened during
 * a create) would otherwise run in the context they were made in.
 */
export function withCause<T>(cause: EventCause, fn: () => T): T {
  return storage.run({ keyId: null, cause, operation: null, task: null }, fn);
}
