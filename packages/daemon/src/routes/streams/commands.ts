/**
 * `/v1/sandboxes/:id/commands/stream`: first text frame `{type:'start', request}` → `{type:'started', pid,
 * maxOutputBytes}`, then output frames, then `{type:'exit', ...}` and close 1000. Accepts stdin frames
 * and `{type:'closeStdin'}` (see frames.ts for the framing and the failure rules).
 */
import { CommandRequest, RamifyError } from '@ramify/contracts';
import { agentFor, startCommand, type Core } from '@ramify/core';
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { z } from 'zod';
import { writeAudit } from '../../http/audit.js';
import { IdParams } from '../../http/route.js';
import { validate } from '../../http/validate.js';
import { codeOf, fail, handleInput, holdWhileOpen, outputTo, parseJson, serial, statusOf } from './frames.js';

const StartMessage = z.strictObject({ type: z.literal('start'), request: CommandRequest });

/** Serve one command stream on `socket`. */
export function commandStream(core: Core, socket: WebSocket, request: FastifyRequest): void {
  let pid: number | null = null;
  let detach: (() => void) | null = null;
  holdWhileOpen(core, socket, request);
  socket.on('close', () => detach?.());
  const queue = serial();
  socket.on('message', (data, isBinary) =>
    queue(async () => {
      if (pid === null) {
        try {
          const { id } = validate(IdParams, request.params, 'params');
          if (isBinary) throw new RamifyError('BAD_REQUEST', "the first frame must be the text frame {type:'start', request}");
          const start = validate(StartMessage, parseJson(data.toString()), 'body');
          const output = outputTo(socket);
          const started = await startCommand(core, id, start.request, output.handlers);
          pid = started.pid;
          detach = started.detach;
          if (socket.readyState !== socket.OPEN) detach();
          output.open({ type: 'started', pid, maxOutputBytes: core.options.maxOutputBytes });
          await writeAudit(core.store, core.clock, core.logger, request, { action: 'command.stream', status: 200 });
        } catch (err) {
          await writeAudit(core.store, core.clock, core.logger, request, { action: 'command.stream', status: statusOf(err), errorCode: codeOf(err) });
          return fail(core, socket, err);
        }
        return;
      }
      await handleInput(core, socket, (request.params as { id: string }).id, pid, data, isBinary);
    }),
  );
  void queue(async () => {
    // Fail fast on an unknown or non-running sandbox, before the client sends anything.
    await agentFor(core, (request.params as { id: string }).id).catch((err: unknown) => fail(core, socket, err));
  });
}
