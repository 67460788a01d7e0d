/**
 * `/v1/sandboxes/:id/pty/stream`: a terminal over a WebSocket. First text frame `{type:'startPty',
 * request: PtyRequest}` → `{type:'started', pid, maxOutputBytes}`, then the terminal's output (channel 1:
 * a terminal merges stdout and stderr), then `{type:'exit', ...}` and close 1000. Input: binary frames on
 * channel 0 (keystrokes) and `{type:'resize', cols, rows}`. Re-attach with the process stream.
 */
import { PtyRequest, ROUTES } from '@ramify/contracts';
import { startPty, type Core } from '@ramify/core';
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { z } from 'zod';
import { validate } from '../../http/validate.js';
import { serveStartStream } from './start-stream.js';

const StartPtyMessage = z.strictObject({ type: z.literal('startPty'), request: PtyRequest });

/** Serve one terminal stream on `socket`. */
export function ptyStream(core: Core, socket: WebSocket, request: FastifyRequest): void {
  serveStartStream(core, socket, request, {
    action: ROUTES.streamPty.action,
    firstFrame: 'startPty',
    start: (id, frame, handlers) => startPty(core, id, validate(StartPtyMessage, frame, 'body').request, handlers),
  });
}
