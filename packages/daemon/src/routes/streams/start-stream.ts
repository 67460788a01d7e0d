/**
 * A stream that starts its process from its first text frame (commands, terminals): validate that frame,
 * start, send `started`, audit, then pass every later frame to the process as input.
 */
import { AsyncResource } from 'node:async_hooks';
import { RamifyError } from '@ramify/contracts';
import { agentFor, type Core, type StreamHandlers } from '@ramify/core';
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { writeAudit } from '../../http/audit.js';
import { IdParams } from '../../http/route.js';
import { validate } from '../../http/validate.js';
import { codeOf, fail, handleInput, holdWhileOpen, outputTo, parseJson, serial, statusOf } from './frames.js';

/** How one kind of stream starts its process. */
export interface StreamStarter {
  /** Audit action, e.g. `command.stream`. */
  action: string;
  /** The first frame's `type`, for the error a binary first frame gets. */
  firstFrame: string;
  /**
   * Validate the first frame (parsed JSON) and start the process with `handlers`.
   * @throws RamifyError as the use-case it calls.
   */
  start(sandboxId: string, frame: unknown, handlers: StreamHandlers): Promise<{ pid: number; detach: () => void }>;
}

/** Serve one starting stream on `socket`. */
export function serveStartStream(core: Core, socket: WebSocket, request: FastifyRequest, starter: StreamStarter): void {
  let pid: number | null = null;
  let detach: (() => void) | null = null;
  holdWhileOpen(core, socket, request);
  socket.on('close', () => detach?.());
  const queue = serial();
  // Bound to the call context the stream was opened in (its key): the socket's events run in another.
  socket.on('message', AsyncResource.bind((data: WebSocket.RawData, isBinary: boolean) =>
    queue(async () => {
      if (pid !== null) return handleInput(core, socket, (request.params as { id: string }).id, pid, data, isBinary);
      try {
        const { id } = validate(IdParams, request.params, 'params');
        if (isBinary) throw new RamifyError('BAD_REQUEST', `the first frame must be the text frame {type:'${starter.firstFrame}', request}`);
        const output = outputTo(socket);
        const started = await starter.start(id, parseJson(data.toString()), output.handlers);
        pid = started.pid;
        detach = started.detach;
        if (socket.readyState !== socket.OPEN) detach();
        output.open({ type: 'started', pid, maxOutputBytes: core.options.maxOutputBytes });
        await writeAudit(core.store, core.clock, core.logger, request, { action: starter.action, status: 200 });
      } catch (err) {
        await writeAudit(core.store, core.clock, core.logger, request, { action: starter.action, status: statusOf(err), errorCode: codeOf(err) });
        fail(core, socket, err);
      }
    })),
  );
  void queue(async () => {
    // Fail fast on an unknown or non-running sandbox, before the client sends anything.
    await agentFor(core, (request.params as { id: string }).id).catch((err: unknown) => fail(core, socket, err));
  });
}
