/**
 * `/v1/sandboxes/:id/processes/:pid/stream?stdout=N&stderr=N`: `{type:'started', pid, maxOutputBytes}`,
 * replay from the offsets, live output, `exit`. Accepts stdin frames, `{type:'closeStdin'}` and, for a
 * terminal, `{type:'resize', cols, rows}` (see frames.ts).
 */
import { attachProcess, type Core } from '@ramify/core';
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { z } from 'zod';
import { PidParams } from '../../http/route.js';
import { validate } from '../../http/validate.js';
import { fail, handleInput, holdWhileOpen, outputTo, serial } from './frames.js';

const Offsets = z.strictObject({ stdout: z.coerce.number().int().min(0).default(0), stderr: z.coerce.number().int().min(0).default(0) });

/** Serve one re-attach stream on `socket`. */
export function processStream(core: Core, socket: WebSocket, request: FastifyRequest): void {
  const queue = serial();
  let target: { id: string; pid: number } | null = null;
  let detach: (() => void) | null = null;
  holdWhileOpen(core, socket, request);
  socket.on('close', () => detach?.());
  void queue(async () => {
    try {
      const { id, pid } = validate(PidParams, request.params, 'params');
      const from = validate(Offsets, request.query ?? {}, 'query');
      const output = outputTo(socket);
      const attached = await attachProcess(core, id, pid, from, output.handlers);
      target = { id, pid };
      detach = attached.detach;
      if (socket.readyState !== socket.OPEN) detach();
      output.open({ type: 'started', pid, maxOutputBytes: core.options.maxOutputBytes });
    } catch (err) {
      fail(core, socket, err);
    }
  });
  socket.on('message', (data, isBinary) =>
    queue(async () => {
      if (target) await handleInput(core, socket, target.id, target.pid, data, isBinary);
    }),
  );
}
