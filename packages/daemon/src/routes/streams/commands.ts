/**
 * `/v1/sandboxes/:id/commands/stream`: first text frame `{type:'start', request}` → `{type:'started', pid,
 * maxOutputBytes}`, then output frames, then `{type:'exit', ...}` and close 1000. Accepts stdin frames
 * and `{type:'closeStdin'}` (see frames.ts for the framing and the failure rules).
 */
import { CommandRequest, ROUTES } from '@ramify/contracts';
import { startCommand, type Core } from '@ramify/core';
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { z } from 'zod';
import { validate } from '../../http/validate.js';
import { serveStartStream } from './start-stream.js';

const StartMessage = z.strictObject({ type: z.literal('start'), request: CommandRequest });

/** Serve one command stream on `socket`. */
export function commandStream(core: Core, socket: WebSocket, request: FastifyRequest): void {
  serveStartStream(core, socket, request, {
    action: ROUTES.streamCommand.action,
    firstFrame: 'start',
    start: (id, frame, handlers) => startCommand(core, id, validate(StartMessage, frame, 'body').request, handlers),
  });
}
