/**
 * Lifecycle events, emitted after a transition has been persisted (the dashboard and streams listen).
 */
import { EventEmitter } from 'node:events';
import type { SandboxState } from '@ramify/contracts';
import type { SandboxRecord } from '../ports/store.js';

export interface SandboxStateEvent {
  sandboxId: string;
  from: SandboxState;
  to: SandboxState;
  /** The record as persisted. */
  sandbox: SandboxRecord;
  at: number;
}

/** Typed wrapper over an EventEmitter; listener errors are the listener's problem (they are caught and dropped). */
export class SandboxEvents {
  readonly #emitter = new EventEmitter();

  constructor() {
    this.#emitter.setMaxListeners(0);
  }

  /** Subscribe; returns the unsubscribe function. */
  onState(listener: (event: SandboxStateEvent) => void): () => void {
    const safe = (event: SandboxStateEvent): void => {
      try {
        listener(event);
      } catch {
        /* a listener's failure must not break a lifecycle operation */
      }
    };
    this.#emitter.on('state', safe);
    return () => this.#emitter.off('state', safe);
  }

  emitState(event: SandboxStateEvent): void {
    this.#emitter.emit('state', event);
  }
}
