/**
 * `/v1/sandboxes/:id/pty/stream`: a terminal over a WebSocket. First text frame `{type:'startPty',
 * request: PtyRequest}` → `{type:'started', pid, maxOutputBytes}`, then the terminal's output (channel 1:
 * a terminal merges stdout and stderr), then `{type:'exit', ...}` and close 1000. Input: binary frames on
 * channel 0 (keystrokes) and `{type:'resize', cols, rows}`. Re-attach with the process stream.
 */
import { PtyRequest, RamifyError } from '@ramify/contracts';
import { agentFor, startPty, type Core } from '@ramify/core';
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { z } from 'zod';
import { writeAudit } from '../../http/audit.js';
import { IdParams } from '../../http/route.js';
import { validate } from '../../http/validate.js';
import { codeOf, fail, handleInput, holdWhileOpen, outputTo, parseJson, serial, statusOf } from './frames.js';

const StartPtyMessage = z.strictObject({ type: z.literal('startPty'), request: PtyRequest });

/** Serve one terminal stream on `socket`. */
export function ptyStream(core: Core, socket: WebSocket, request: FastifyRequest): void {
  let pid: number | null = null;
  let detach: (() => void) | null = null;
  holdWhileOpen(core, socket, request);
  socket.on('close', () => detach?.());
  const queue = serial();
  socket.on('message', (data, isBinary) =>
    queue(async () => {
      if (pid !== null) return handleInput(core, socket, (request.params as { id: string }).id, pid, data, isBinary);
      try {
        const { id } = validate(IdParams, request.params, 'params');
        if (isBinary) throw new RamifyError('BAD_REQUEST', "the first frame must be the text frame {type:'startPty', request}");
        const start = validate(StartPtyMessage, parseJson(data.toString()), 'body');
        const output = outputTo(socket);
        const started = await startPty(core, id, start.request, output.handlers);
        pid = started.pid;
        detach = started.detach;
        if (socket.readyState !== socket.OPEN) detach();
        output.open({ type: 'started', pid, maxOutputBytes: core.options.maxOutputBytes });
        await writeAudit(core.store, core.clock, core.logger, request, { action: 'pty.stream', status: 200 });
      } catch (err) {
        await writeAudit(core.store, core.clock, core.logger, request, { action: 'pty.stream', status: statusOf(err), errorCode: codeOf(err) });
        fail(core, socket, err);
      }
    }),
  );
  void queue(async () => {
    // Fail fast on an unknown or non-running sandbox, before the client sends anything.
    await agentFor(core, (request.params as { id: string }).id).catch((err: unknown) => fail(core, socket, err));
  });
}
