/**
 * The watch stream: `/v1/sandboxes/:id/files/watch?path=P&recursive=true` starts a watch,
 * `/v1/sandboxes/:id/files/watch/:watchId?from=N` listens to one again (replay from sequence number N,
 * then live). Frames: contracts' `WatchControl` (`watching` first, `events`, `end`; `stop` from the
 * client). Closing the socket never stops the watch (the agent stops one nobody listened to for a minute).
 */
import { RamifyError, ROUTES, type WatchControl, type WatchEndReason, type WatchWireEvent } from '@ramify/contracts';
import { attachWatch, startWatch, stopWatch, type Core, type WatchStreamHandlers } from '@ramify/core';
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { z } from 'zod';
import { writeAudit } from '../../http/audit.js';
import { IdParams } from '../../http/route.js';
import { validate } from '../../http/validate.js';
import { codeOf, fail, holdWhileOpen, parseJson, serial, statusOf } from './frames.js';

const StartQuery = z.strictObject({ path: z.string().min(1).max(4096), recursive: z.enum(['true', 'false']).default('false') });
const AttachParams = IdParams.extend({ watchId: z.string().min(1).max(64) });
const AttachQuery = z.strictObject({ from: z.coerce.number().int().min(0).default(0) });
const ClientControl = z.strictObject({ type: z.literal('stop') });

/** Serve one watch stream on `socket`: start a new watch, or re-attach when the route names one. */
export function watchStream(core: Core, socket: WebSocket, request: FastifyRequest): void {
  const queue = serial();
  let target: { id: string; watchId: string } | null = null;
  let detach: (() => void) | null = null;
  holdWhileOpen(core, socket, request);
  socket.on('close', () => detach?.());
  void queue(async () => {
    const reattach = 'watchId' in (request.params as object);
    try {
      const frames = framesTo(socket);
      if (reattach) {
        const { id, watchId } = validate(AttachParams, request.params, 'params');
        const { from } = validate(AttachQuery, request.query ?? {}, 'query');
        const attached = await attachWatch(core, id, watchId, from, frames.handlers);
        target = { id, watchId };
        detach = attached.detach;
        frames.open({ type: 'watching', watchId, path: attached.path, recursive: attached.recursive, from: attached.from });
      } else {
        const { id } = validate(IdParams, request.params, 'params');
        const query = validate(StartQuery, request.query ?? {}, 'query');
        const started = await startWatch(core, id, { path: query.path, recursive: query.recursive === 'true' }, frames.handlers);
        target = { id, watchId: started.watchId };
        detach = started.detach;
        frames.open({ type: 'watching', watchId: started.watchId, path: started.path, recursive: started.recursive, from: started.nextSeq });
        await writeAudit(core.store, core.clock, core.logger, request, { action: ROUTES.watchDir.action, status: 200 });
      }
      if (socket.readyState !== socket.OPEN) detach();
    } catch (err) {
      if (!reattach) await writeAudit(core.store, core.clock, core.logger, request, { action: ROUTES.watchDir.action, status: statusOf(err), errorCode: codeOf(err) });
      fail(core, socket, err);
    }
  });
  socket.on('message', (data, isBinary) =>
    queue(async () => {
      if (!target) return;
      try {
        if (isBinary) throw new RamifyError('BAD_REQUEST', "a watch stream takes only the text frame {type:'stop'}");
        validate(ClientControl, parseJson(data.toString()), 'body');
        await stopWatch(core, target.id, target.watchId);
      } catch (err) {
        send(socket, { type: 'error', code: codeOf(err), message: err instanceof Error ? err.message : String(err) });
      }
    }),
  );
}

/** Handlers writing `events` and `end` frames, held until {@link open} has sent `watching`. */
function framesTo(socket: WebSocket): { handlers: WatchStreamHandlers; open: (watching: WatchControl) => void } {
  let queued: WatchControl[] | null = [];
  const later = (frame: WatchControl): void => {
    if (queued) queued.push(frame);
    else send(socket, frame);
    if (!queued && frame.type === 'end' && socket.readyState === socket.OPEN) socket.close(1000, 'watch ended');
  };
  return {
    handlers: {
      onEvents: (events: WatchWireEvent[]) => later({ type: 'events', events }),
      onEnd: (end: { reason: WatchEndReason; message?: string }) => later({ type: 'end', ...end }),
      onDisconnect: () => {
        if (socket.readyState === socket.OPEN) socket.close(1001, 'agent channel closed; re-attach later');
      },
    },
    open: (watching) => {
      send(socket, watching);
      const frames = queued ?? [];
      queued = null;
      for (const frame of frames) later(frame);
    },
  };
}

function send(socket: WebSocket, frame: WatchControl): void {
  if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(frame));
}
