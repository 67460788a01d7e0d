/**
 * Lifecycle events, emitted after a transition has been persisted (the dashboard and streams listen),
 * changes of a sandbox's ingress settings (persisted too), fork trees found over their budget, and what happens inside a running sandbox that its agent reports (a process killed for running out
 * of memory: `oom`).
 */
import { EventEmitter } from 'node:events';
import type { OomKillEvent, SandboxState } from '@ramify/contracts';
import type { SandboxRecord } from '../ports/store.js';

export interface SandboxStateEvent {
  sandboxId: string;
  from: SandboxState;
  to: SandboxState;
  /** The record as persisted. */
  sandbox: SandboxRecord;
  at: number;
}

/** A process of a running sandbox was killed because the sandbox ran out of memory (the sandbox runs on). */
export interface SandboxOomEvent extends Omit<OomKillEvent, 'type' | 'sandboxId' | 'at'> {
  sandboxId: string;
  /** When the host learnt of it, ms (host clock). */
  at: number;
}

/** A checkpoint of a running sandbox whose runtime cannot carry open TCP connections is about to wait for them to close. */
export interface SandboxCheckpointingEvent {
  sandboxId: string;
  at: number;
}

/** A sandbox's exposed ports or autoResume changed (persisted; `sandbox` is the stored record). */
export interface SandboxIngressEvent {
  sandboxId: string;
  sandbox: SandboxRecord;
}

/**
 * A fork tree went over its budget (cpuSeconds or sandboxSeconds): its running sandboxes are being paused,
 * and forks and resumes in it are refused until the budget is raised. Emitted once per crossing (persisted
 * with the budget first).
 */
export interface SandboxBudgetEvent {
  /** The sandbox the budget is set on: the root of the tree it covers. */
  rootId: string;
  teamId: string;
  /** The limit gone over. */
  limit: 'cpuSeconds' | 'sandboxSeconds';
  /** Its value, and what the tree had used when it was found over it (seconds, since the budget was set). */
  max: number;
  used: number;
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
    return this.#on('state', listener);
  }

  emitState(event: SandboxStateEvent): void {
    this.#emitter.emit('state', event);
  }

  /** Subscribe to OOM kills; returns the unsubscribe function. */
  onOom(listener: (event: SandboxOomEvent) => void): () => void {
    return this.#on('oom', listener);
  }

  emitOom(event: SandboxOomEvent): void {
    this.#emitter.emit('oom', event);
  }

  /**
   * Subscribe to checkpoints about to wait for connections (the ingress drops its own to the sandbox, so
   * that a client holding one does not block the pause; its next request wakes the sandbox).
   */
  onCheckpointing(listener: (event: SandboxCheckpointingEvent) => void): () => void {
    return this.#on('checkpointing', listener);
  }

  emitCheckpointing(event: SandboxCheckpointingEvent): void {
    this.#emitter.emit('checkpointing', event);
  }

  /** Subscribe to changes of exposed ports and autoResume (the ingress's route cache follows them). */
  onIngress(listener: (event: SandboxIngressEvent) => void): () => void {
    return this.#on('ingress', listener);
  }

  emitIngress(event: SandboxIngressEvent): void {
    this.#emitter.emit('ingress', event);
  }

  /** Subscribe to budgets found exceeded; returns the unsubscribe function. */
  onBudget(listener: (event: SandboxBudgetEvent) => void): () => void {
    return this.#on('budget', listener);
  }

  emitBudget(event: SandboxBudgetEvent): void {
    this.#emitter.emit('budget', event);
  }

  #on<E>(name: 'state' | 'oom' | 'checkpointing' | 'ingress' | 'budget', listener: (event: E) => void): () => void {
    const safe = (event: E): void => {
      try {
        listener(event);
      } catch {
        /* a listener's failure must not break a lifecycle operation or a report */
      }
    };
    this.#emitter.on(name, safe);
    return () => this.#emitter.off(name, safe);
  }
}
