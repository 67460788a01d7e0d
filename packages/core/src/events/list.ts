/**
 * Use-cases: read a team's events (a page, with a cursor) and follow them live. A key sees its own team's
 * events only; naming another team's sandbox is 404 `SANDBOX_NOT_FOUND`, as an unknown one.
 */
import { EVENTS_DEFAULT_LIMIT, type EventType, type ListEventsResponse, type SandboxEvent } from '@ramify/contracts';
import { ownedSandbox } from '../access/actor.js';
import type { Core } from '../context.js';
import type { EventRecord } from '../ports/event-store.js';
import { eventId, teamSeqOf } from './cursor.js';

/** What to list or follow (validated by the contract schemas first). */
export interface EventFilter {
  sandboxId?: string;
  types?: readonly EventType[];
  /** An event id of the team (`events/cursor.ts`): start after it. */
  after?: string;
}

/** The API shape of a stored event. */
export function toSandboxEvent(r: EventRecord): SandboxEvent {
  return { id: eventId(r.teamId, r.teamSeq), type: r.type, at: new Date(r.at).toISOString(), sandboxId: r.sandboxId, team: r.teamId, keyId: r.keyId, cause: r.cause, data: r.data };
}

/**
 * The team number `filter.after` names (0 without one: from the start).
 * @throws RamifyError `INVALID_CURSOR`.
 */
async function afterOf(core: Core, teamId: string, filter: EventFilter): Promise<number | undefined> {
  if (filter.after === undefined) return undefined;
  return teamSeqOf(teamId, filter.after, await core.store.lastEventTeamSeq(teamId));
}

/** Whether `event` passes `filter` (the live side's check; the store does it for pages). */
export function matches(event: EventRecord, teamId: string, filter: EventFilter): boolean {
  return event.teamId === teamId
    && (filter.sandboxId === undefined || event.sandboxId === filter.sandboxId)
    && (filter.types === undefined || filter.types.length === 0 || filter.types.includes(event.type));
}

/**
 * One page of `teamId`'s events, oldest first (`order: 'asc'`, default) or newest first.
 * @throws RamifyError `SANDBOX_NOT_FOUND` when `filter.sandboxId` is not the team's, `INVALID_CURSOR`.
 */
export async function listEvents(core: Core, teamId: string, filter: EventFilter & { limit?: number; order?: 'asc' | 'desc' }): Promise<ListEventsResponse> {
  if (filter.sandboxId !== undefined) await ownedSandbox(core, teamId, filter.sandboxId);
  await core.eventLog.flush();
  const after = await afterOf(core, teamId, filter);
  const limit = filter.limit ?? EVENTS_DEFAULT_LIMIT;
  const order = filter.order ?? 'asc';
  const rows = await core.store.listEvents({
    teamId, order, limit: limit + 1,
    ...(filter.sandboxId !== undefined ? { sandboxId: filter.sandboxId } : {}),
    ...(filter.types ? { types: filter.types } : {}),
    ...(after !== undefined ? { afterTeamSeq: after } : {}),
  });
  const hasMore = rows.length > limit;
  const events = rows.slice(0, limit).map(toSandboxEvent);
  const last = events.at(-1)?.id ?? null;
  const nextCursor = order === 'asc' ? (last ?? filter.after ?? null) : hasMore ? last : null;
  return { events, nextCursor, hasMore };
}

/** A live subscription: stop it to stop receiving. */
export interface EventSubscription {
  stop(): void;
}

/**
 * Follow `teamId`'s events: those after `filter.after` first (from the store, oldest first), then each new
 * one as it is stored, each exactly once and in order. `onEvent` must not block (a stream sends a frame).
 * @throws RamifyError `SANDBOX_NOT_FOUND` when `filter.sandboxId` is not the team's, `INVALID_CURSOR`.
 */
export async function followEvents(core: Core, teamId: string, filter: EventFilter, onEvent: (event: SandboxEvent) => void): Promise<EventSubscription> {
  if (filter.sandboxId !== undefined) await ownedSandbox(core, teamId, filter.sandboxId);
  if (filter.after !== undefined) await core.eventLog.flush();
  const after = await afterOf(core, teamId, filter);
  // Subscribe first and hold live events until the replay is out: none falls between the two.
  let held: EventRecord[] | null = [];
  let lastSeq = after ?? 0;
  const deliver = (event: EventRecord): void => {
    if (!matches(event, teamId, filter) || event.teamSeq <= lastSeq) return;
    lastSeq = event.teamSeq;
    onEvent(toSandboxEvent(event));
  };
  const unsubscribe = core.eventHub.subscribe((event) => (held ? held.push(event) : deliver(event)));
  try {
    if (after !== undefined) {
      await core.eventLog.flush();
      for (let page = await replayPage(core, teamId, filter, lastSeq); page.length > 0; page = await replayPage(core, teamId, filter, lastSeq)) {
        page.forEach(deliver);
      }
    }
  } catch (err) {
    unsubscribe();
    throw err;
  }
  const waiting = held;
  held = null;
  waiting.forEach(deliver);
  return { stop: unsubscribe };
}

function replayPage(core: Core, teamId: string, filter: EventFilter, afterTeamSeq: number): Promise<EventRecord[]> {
  return core.store.listEvents({ teamId, order: 'asc', limit: 500, afterTeamSeq, ...(filter.sandboxId !== undefined ? { sandboxId: filter.sandboxId } : {}), ...(filter.types ? { types: filter.types } : {}) });
}
