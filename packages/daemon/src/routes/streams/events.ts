/**
 * `/v1/events/stream?sandboxId=&type=&after=`: the team's events live over a WebSocket (contracts'
 * `EventStreamFrame`): what followed `after` first (replayed from the store), then `ready`, then each new
 * event as it is stored, oldest first, each once. Only the key's team's events; naming another team's
 * sandbox is the usual error frame (`SANDBOX_NOT_FOUND`, close 1008). A reader that falls more than
 * {@link MAX_BUFFERED_BYTES} behind is closed with 1013: reconnect with `after` = the last id it got.
 */
import { EventStreamQuery, type EventStreamFrame } from '@ramify/contracts';
import { followEvents, type Core } from '@ramify/core';
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { callerOf } from '../../http/request-context.js';
import { validate } from '../../http/validate.js';
import { fail } from './frames.js';

/** Unsent bytes a stream may hold for a slow reader before it is closed. */
export const MAX_BUFFERED_BYTES = 4 << 20;

export const EVENT_STREAM_DOC =
  'Query: sandboxId, type (comma-separated event types), after (an event id: replay what followed it first). Text frames (EventStreamFrame): the replayed events, '
  + '{type:"ready", after} once live, then {type:"event", event: SandboxEvent} for each new event, oldest first. A reader too slow to keep up is closed with 1013: reconnect with after = the last event id received.';

/** Serve one event stream on `socket`. */
export function eventStream(core: Core, socket: WebSocket, request: FastifyRequest): void {
  let stop: (() => void) | null = null;
  socket.on('close', () => stop?.());
  const send = (frame: EventStreamFrame): void => {
    if (socket.readyState !== socket.OPEN) return;
    if (socket.bufferedAmount > MAX_BUFFERED_BYTES) {
      socket.close(1013, 'reader too slow: reconnect with after=<last event id>');
      return;
    }
    socket.send(JSON.stringify(frame));
  };
  void (async () => {
    try {
      const query = validate(EventStreamQuery, request.query ?? {}, 'query');
      const subscription = await followEvents(core, callerOf(request).teamId, {
        ...(query.sandboxId !== undefined ? { sandboxId: query.sandboxId } : {}),
        ...(query.type !== undefined ? { types: query.type } : {}),
        ...(query.after !== undefined ? { after: query.after } : {}),
      }, (event) => send({ type: 'event', event }));
      stop = subscription.stop;
      if (socket.readyState !== socket.OPEN) return subscription.stop();
      send({ type: 'ready', after: query.after ?? null });
    } catch (err) {
      fail(core, socket, err);
    }
  })();
}
