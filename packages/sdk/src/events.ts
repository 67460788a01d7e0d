/**
 * Lifecycle events (docs/design/EVENTS.md): `Events.list` pages through the team's events with a cursor,
 * `Events.stream` follows them live (a WebSocket that re-opens itself from the last event it delivered),
 * and `Events.timeline` reads one sandbox's timeline. `Sandbox.listEvents(id)` and `sbx.events` are the
 * same calls for one sandbox.
 */
import { ROUTES } from '@ramify/contracts/client';
import type WebSocket from 'ws';
import { loadWebSocket } from './ws.js';
import type { EventStreamFrame, EventType, ListEventsResponse, SandboxEvent, TimelineEntry, TimelineResponse } from '@ramify/contracts';
import { resolveConnection, type ConnectionOpts } from './connection.js';
import { ApiClient } from './http.js';
import { errorFromCode, type RamifyError } from './errors.js';
import { rejectRefusedUpgrade } from './commands/stream-socket.js';

/** Filters of {@link Events.list} and {@link Events.stream}. */
export interface EventFilterOpts {
  /** Only this sandbox's events (another team's sandbox: `SandboxNotFoundError`). */
  sandboxId?: string;
  /** Only these types. */
  types?: EventType[];
  /**
   * Start after this event id (a `nextCursor`, or the id of the last event you have): opaque and per team;
   * one that is not of the key's team is refused with `INVALID_CURSOR` (a `RamifyError`, 400).
   */
  after?: string;
}

/** Options of {@link Events.list}. */
export interface ListEventsOpts extends EventFilterOpts, ConnectionOpts {
  /** 1-1000, default 100. */
  limit?: number;
  /** `asc` (default): oldest first; `desc`: newest first. */
  order?: 'asc' | 'desc';
}

/** Options of {@link Events.stream}. */
export interface StreamEventsOpts extends EventFilterOpts, ConnectionOpts {
  /** Called with every event, oldest first, each once. */
  onEvent: (event: SandboxEvent) => void;
  /** Called once the stream is live (after replaying what followed `after`). */
  onReady?: () => void;
}

/** A live event stream: `stop()` ends it; `ended` settles when it ends (never rejects). */
export interface EventStreamHandle {
  stop(): void;
  /** Resolves with null after `stop()`, or with the error that ended the stream (a refusal after a re-open). */
  readonly ended: Promise<RamifyError | Error | null>;
}

const query = (o: EventFilterOpts & { limit?: number; order?: string }): Record<string, string | number | undefined> => ({
  sandboxId: o.sandboxId, type: o.types && o.types.length > 0 ? o.types.join(',') : undefined, after: o.after, limit: o.limit, order: o.order,
});

/** Wait before re-opening a dropped stream, ms (doubles up to 10 s). */
const REOPEN_BASE_MS = 250;

/** The team's events: statics taking {@link ConnectionOpts} last, like `Network`. */
export class Events {
  private constructor() {}

  /**
   * One page of events, oldest first by default; pass `nextCursor` as `after` for the next one (oldest
   * first it is always set: polling with it returns only newer events).
   * @throws `VALIDATION_FAILED` (an unknown type, a malformed cursor), `SandboxNotFoundError`.
   */
  static list(opts: ListEventsOpts = {}): Promise<ListEventsResponse> {
    const { apiUrl, apiKey, requestTimeoutMs, headers, ...filter } = opts;
    return listEventsWith(new ApiClient(resolveConnection({ apiUrl, apiKey, requestTimeoutMs, headers })), filter);
  }

  /**
   * Follow events live: those after `after` first, then each new one. A dropped connection is re-opened
   * from the last event delivered (none is missed or repeated while the daemon keeps them).
   * Resolves once the stream is live.
   * @throws the API's refusal of the first connection (`VALIDATION_FAILED`, `SandboxNotFoundError`, `AuthenticationError`).
   */
  static async stream(opts: StreamEventsOpts): Promise<EventStreamHandle> {
    const { apiUrl, apiKey, requestTimeoutMs, headers, ...rest } = opts;
    return streamEventsWith(new ApiClient(resolveConnection({ apiUrl, apiKey, requestTimeoutMs, headers })), rest);
  }

  /**
   * A sandbox's timeline: its lifecycle events, the commands run in it (exit code, duration), its egress
   * and ingress decisions, merged by time: the newest `limit` (default 200), newest first unless `order: 'asc'`.
   */
  static timeline(sandboxId: string, opts: ConnectionOpts & TimelineOpts = {}): Promise<TimelineEntry[]> {
    const { limit, order, ...conn } = opts;
    return timelineWith(new ApiClient(resolveConnection(conn)), sandboxId, { limit, order });
  }
}

/** Options of a timeline read. */
export interface TimelineOpts {
  /** 1-1000, default 200. */
  limit?: number;
  /** `desc` (default): newest first; `asc`: oldest first. */
  order?: 'asc' | 'desc';
}

/** @internal {@link Events.list} over an existing client. */
export function listEventsWith(api: ApiClient, filter: Omit<ListEventsOpts, keyof ConnectionOpts>): Promise<ListEventsResponse> {
  return api.at(ROUTES.listEvents, {}).json<ListEventsResponse>({ query: query(filter) });
}

/** @internal {@link Events.timeline} over an existing client. */
export async function timelineWith(api: ApiClient, sandboxId: string, opts: TimelineOpts): Promise<TimelineEntry[]> {
  return (await api.at(ROUTES.getTimeline, { id: sandboxId }).json<TimelineResponse>({ query: { limit: opts.limit, order: opts.order } })).entries;
}

/** @internal {@link Events.stream} over an existing client. */
export async function streamEventsWith(api: ApiClient, opts: Omit<StreamEventsOpts, keyof ConnectionOpts>): Promise<EventStreamHandle> {
  const WS = await loadWebSocket();
  const { onEvent, onReady, ...filter } = opts;
  let after = filter.after;
  let stopped = false;
  let current: WebSocket | null = null;
  let settle!: (why: RamifyError | Error | null) => void;
  const ended = new Promise<RamifyError | Error | null>((resolve) => (settle = resolve));
  const open = (first: boolean, delayMs: number): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const ws = new WS(api.at(ROUTES.streamEvents, {}).wsUrl(query({ ...filter, after })), { headers: api.authHeaders() });
      current = ws;
      let live = false;
      let refusal: RamifyError | undefined;
      let refused = false;
      ws.on('message', (data: WebSocket.RawData) => {
        let frame: EventStreamFrame;
        try {
          frame = JSON.parse(data.toString()) as EventStreamFrame;
        } catch {
          return; // Not a frame of this protocol: ignored.
        }
        if (frame.type === 'event') {
          after = frame.event.id;
          onEvent(frame.event);
        } else if (frame.type === 'ready') {
          live = true;
          if (first) onReady?.();
          resolve();
        } else if (frame.type === 'error') refusal = errorFromCode(frame.code, frame.message);
      });
      ws.on('unexpected-response', (req, res) => {
        refused = true;
        rejectRefusedUpgrade(api, '/events/stream', req, res, first ? reject : (err) => settle(err));
      });
      ws.on('error', (err: Error) => {
        if (!live && first) reject(api.connectionError(Object.assign(new Error(err.message), { cause: err })));
      });
      ws.on('close', () => {
        if (refused) return undefined;
        if (stopped) return settle(null);
        if (refusal) return first && !live ? reject(refusal) : settle(refusal);
        if (first && !live) return reject(api.connectionError(new Error('event stream closed before it was live')));
        // Dropped (a restart, a slow reader): open again from the last event delivered.
        setTimeout(() => (stopped ? settle(null) : void open(false, Math.min(delayMs * 2, 10_000)).catch((err: unknown) => settle(err as Error))), delayMs);
      });
    });
  await open(true, REOPEN_BASE_MS);
  return {
    stop: () => {
      stopped = true;
      const ws = current as WebSocket | null;
      if (ws && (ws.readyState === WS.OPEN || ws.readyState === WS.CONNECTING)) ws.close(1000);
      else settle(null);
    },
    ended,
  };
}
