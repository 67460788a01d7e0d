/**
 * Lifecycle events, emitted after a transition has been persisted (the dashboard and streams listen),
 * changes of a sandbox's ingress settings (persisted too), fork trees found over their budget (`budget`), and what happens inside a running sandbox that its agent reports (a process killed for running out
 * of memory: `oom`). Forks, named snapshots and timeouts are announced once done (`forked`, `snapshotted`,
 * `timedOut`). Every kind is in {@link SandboxEventMap}: the event recorder (`events/recorder.ts`) takes
 * each kind the map has, so a new kind is one entry there, one in {@link SANDBOX_EVENT_KINDS} and one
 * mapping in the recorder (the compiler asks for each).
 */
import { EventEmitter } from 'node:events';
import type { OomKillEvent, SandboxState, TimeoutAction } from '@ramify/contracts';
import type { SandboxRecord, SnapshotRecord } from '../ports/store.js';

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

/** A fork finished: `sandbox` is the parent as persisted, `children` its new sandboxes (all running). */
export interface SandboxForkedEvent {
  sandboxId: string;
  sandbox: SandboxRecord;
  children: SandboxRecord[];
  /** The fork point the children were restored from. */
  snapshotId: string;
  at: number;
}

/** A named snapshot of the sandbox was taken (and is ready). */
export interface SandboxSnapshottedEvent {
  sandboxId: string;
  sandbox: SandboxRecord;
  snapshot: SnapshotRecord;
  at: number;
}

/** The sandbox's deadline passed: its `onTimeout` action is about to be applied. */
export interface SandboxTimedOutEvent {
  sandboxId: string;
  sandbox: SandboxRecord;
  action: TimeoutAction;
  at: number;
}

/**
 * An open agent channel of a running sandbox dropped on its own and could not be reopened within the
 * connect bound: its runtime instance may be gone. Agent sessions report it; the lifecycle
 * (`instance-lost.ts`) asks the runtime and records the loss, a pooled sandbox is dropped from the pool.
 */
export interface SandboxAgentLostEvent {
  sandboxId: string;
  /** The last reconnect's error message. */
  error: string;
  at: number;
}

/**
 * Why a runtime instance ended on its own (containerd's exit reasons): `oom` (out of memory), `exited`
 * (its runtime reports it stopped: crashed or killed from outside), `missing` (its runtime has no trace of it).
 */
export type InstanceLossReason = 'oom' | 'exited' | 'missing';

/**
 * A running sandbox's runtime instance was found gone: its resources are released and it is recorded
 * `error` (persisted before this is emitted; the `state` event says so too, and is what is stored and
 * delivered to webhooks as `sandbox.lifecycle.error`).
 */
export interface SandboxInstanceLostEvent {
  sandboxId: string;
  /** The record as persisted (state `error`, the reason in `error`). */
  sandbox: SandboxRecord;
  reason: InstanceLossReason;
  /** What noticed it: its agent channel ({@link SandboxAgentLostEvent}), the liveness monitor, or a call that found its agent unreachable. */
  noticedBy: 'agent-channel' | 'liveness' | 'call';
  at: number;
}

/** Every kind of event on the bus and its payload. */
export interface SandboxEventMap {
  state: SandboxStateEvent;
  oom: SandboxOomEvent;
  checkpointing: SandboxCheckpointingEvent;
  ingress: SandboxIngressEvent;
  forked: SandboxForkedEvent;
  snapshotted: SandboxSnapshottedEvent;
  timedOut: SandboxTimedOutEvent;
  budget: SandboxBudgetEvent;
  agentLost: SandboxAgentLostEvent;
  instanceLost: SandboxInstanceLostEvent;
}
export type SandboxEventKind = keyof SandboxEventMap;
/** One event of any kind, as {@link SandboxEvents.onAny} hands it. */
export type AnySandboxEvent = { [K in SandboxEventKind]: { kind: K; event: SandboxEventMap[K] } }[SandboxEventKind];

/** Every kind, at run time (the compiler checks it against {@link SandboxEventMap}). */
export const SANDBOX_EVENT_KINDS = Object.keys({
  state: true, oom: true, checkpointing: true, ingress: true, forked: true, snapshotted: true, timedOut: true, budget: true, agentLost: true, instanceLost: true,
} satisfies Record<SandboxEventKind, true>) as SandboxEventKind[];

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

  /** Subscribe to finished forks. */
  onForked(listener: (event: SandboxForkedEvent) => void): () => void {
    return this.#on('forked', listener);
  }

  emitForked(event: SandboxForkedEvent): void {
    this.#emitter.emit('forked', event);
  }

  /** Subscribe to named snapshots taken. */
  onSnapshotted(listener: (event: SandboxSnapshottedEvent) => void): () => void {
    return this.#on('snapshotted', listener);
  }

  emitSnapshotted(event: SandboxSnapshottedEvent): void {
    this.#emitter.emit('snapshotted', event);
  }

  /** Subscribe to timeouts about to be applied. */
  onTimedOut(listener: (event: SandboxTimedOutEvent) => void): () => void {
    return this.#on('timedOut', listener);
  }

  emitTimedOut(event: SandboxTimedOutEvent): void {
    this.#emitter.emit('timedOut', event);
  }

  /** Subscribe to budgets found exceeded; returns the unsubscribe function. */
  onBudget(listener: (event: SandboxBudgetEvent) => void): () => void {
    return this.#on('budget', listener);
  }

  emitBudget(event: SandboxBudgetEvent): void {
    this.#emitter.emit('budget', event);
  }

  /** Subscribe to agent channels lost for good (the lifecycle checks the instance); returns the unsubscribe function. */
  onAgentLost(listener: (event: SandboxAgentLostEvent) => void): () => void {
    return this.#on('agentLost', listener);
  }

  emitAgentLost(event: SandboxAgentLostEvent): void {
    this.#emitter.emit('agentLost', event);
  }

  /** Subscribe to runtime instances found gone (the sandbox is `error` already); returns the unsubscribe function. */
  onInstanceLost(listener: (event: SandboxInstanceLostEvent) => void): () => void {
    return this.#on('instanceLost', listener);
  }

  emitInstanceLost(event: SandboxInstanceLostEvent): void {
    this.#emitter.emit('instanceLost', event);
  }

  /**
   * Subscribe to every kind, in emit order (the listener runs synchronously in the emitter's call, so its
   * call context is the emitter's). Returns the unsubscribe function.
   */
  onAny(listener: (event: AnySandboxEvent) => void): () => void {
    const offs = SANDBOX_EVENT_KINDS.map((kind) => this.#on(kind, (event: SandboxEventMap[typeof kind]) => listener({ kind, event } as AnySandboxEvent)));
    return () => offs.forEach((off) => off());
  }

  #on<E>(name: SandboxEventKind, listener: (event: E) => void): () => void {
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
