/**
 * Which bus events become stored events, and how: one mapping per kind of {@link SandboxEventMap} (the
 * compiler asks for a new kind's). A mapping runs synchronously in the emitter's call, with its call
 * context (who caused it); it returns the event to store, or null for what is not an event of its own.
 */
import type { EventType } from '@ramify/contracts';
import type { CallContext } from '../observe/call-context.js';
import type { EventRecord } from '../ports/event-store.js';
import type { SandboxEventMap, SandboxEventKind, SandboxStateEvent } from '../lifecycle/events.js';

/** An event to store; `teamId` null: look it up from the sandbox's record. */
export type NewEvent = Omit<EventRecord, 'seq' | 'teamSeq' | 'teamId'> & { teamId: string | null };

type Mapping<K extends SandboxEventKind> = (event: SandboxEventMap[K], context: CallContext) => NewEvent | null;

/** The event of `type` about `sandboxId` at `at`, caused as `context` says. */
function stored(type: EventType, sandboxId: string, teamId: string | null, at: number, context: CallContext, data: Record<string, unknown> = {}): NewEvent {
  return { type, at, sandboxId, teamId, keyId: context.keyId, cause: context.cause, data };
}

/** Whether `sandboxId`'s transition is part of a fork or snapshot of it (their brief pause and restore). */
function insideForkOrSnapshot(context: CallContext, sandboxId: string): boolean {
  const task = context.task;
  return task !== null && task.sandboxId === sandboxId && (task.name === 'fork' || task.name === 'snapshot');
}

/**
 * A state change as an event: `created` (creating → running), `paused` (pausing → paused), `resumed`
 * (resuming → running), `killed`, `error`; none for roll-backs (a refused pause, a failed resume) and for
 * the steps of a fork or snapshot of a running sandbox.
 */
function fromState(e: SandboxStateEvent, context: CallContext): NewEvent | null {
  const { sandbox: s, from, to, at } = e;
  if (from === 'creating' && to === 'running') {
    return stored('sandbox.lifecycle.created', s.id, s.teamId, at, context, { parentId: s.parentId, templateId: s.templateId, sourceSnapshotId: s.sourceSnapshotId, runtime: s.runtime });
  }
  if (to === 'killed') return stored('sandbox.lifecycle.killed', s.id, s.teamId, at, context, s.error ? { error: s.error } : {});
  if (to === 'error') return stored('sandbox.lifecycle.error', s.id, s.teamId, at, context, { error: s.error });
  if (insideForkOrSnapshot(context, s.id)) return null;
  if (from === 'pausing' && to === 'paused') return stored('sandbox.lifecycle.paused', s.id, s.teamId, at, context);
  if (from === 'resuming' && to === 'running') return stored('sandbox.lifecycle.resumed', s.id, s.teamId, at, context);
  return null;
}

/**
 * Every kind's mapping. A kind added to the bus (the budget branch's `budget`: `budget.exceeded`) gets one
 * line here.
 */
export const EVENTS_FROM_BUS: { [K in SandboxEventKind]: Mapping<K> } = {
  state: fromState,
  oom: (e, context) => {
    const { sandboxId, at, ...kill } = e;
    // Reported by the agent: no call caused it (its channel's callbacks run in the context it was opened in).
    return stored('sandbox.oom', sandboxId, null, at, { ...context, keyId: null, cause: 'runtime' }, { ...kill });
  },
  checkpointing: () => null,
  ingress: () => null,
  forked: (e, context) => stored('sandbox.lifecycle.forked', e.sandboxId, e.sandbox.teamId, e.at, context, { childIds: e.children.map((c) => c.id), snapshotId: e.snapshotId }),
  snapshotted: (e, context) => stored('sandbox.lifecycle.snapshotted', e.sandboxId, e.sandbox.teamId, e.at, context, { snapshotId: e.snapshot.id, name: e.snapshot.name }),
  timedOut: (e, context) => stored('sandbox.lifecycle.timed_out', e.sandboxId, e.sandbox.teamId, e.at, context, { action: e.action }),
  // Found by the usage sampler, not by a call: about the tree's root (the sandbox the budget is set on).
  budget: (e, context) => stored('budget.exceeded', e.rootId, e.teamId, e.at, { ...context, keyId: null, cause: 'budget' }, { rootId: e.rootId, limit: e.limit, max: e.max, used: e.used }),
  // Suspicion only: the lifecycle checks the runtime, and a loss it confirms is the `error` transition.
  agentLost: () => null,
  // Already stored and delivered as that transition's `sandbox.lifecycle.error` (with the reason as `error`).
  instanceLost: () => null,
};
