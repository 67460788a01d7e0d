/**
 * The WebSocket streams, one file per kind: commands (start and stream a command), processes
 * (re-attach to any process, commands and terminals alike) and terminals (start and stream a PTY).
 * frames.ts has what they share: framing, input, errors.
 */
import type { Core } from '@ramify/core';
import type { FastifyInstance } from 'fastify';
import type { ExtraOperation } from '../../http/openapi.js';
import type { RouteConfig } from '../../http/route.js';
import { commandStream } from './commands.js';
import { STARTED_DOC } from './frames.js';
import { processStream } from './processes.js';
import { ptyStream } from './terminals.js';

export const streamDocs: ExtraOperation[] = [
  { method: 'get', path: '/v1/sandboxes/{id}/commands/stream', summary: 'Run a command over a WebSocket', description: `First text frame {type:"start", request: CommandRequest}; see StreamControl. ${STARTED_DOC}` },
  { method: 'get', path: '/v1/sandboxes/{id}/processes/{pid}/stream', summary: "Re-attach to a process's output", description: `Query stdout=N&stderr=N byte offsets; replay, then live output; see StreamControl. A terminal also takes {type:"resize", cols, rows}. ${STARTED_DOC}` },
  {
    method: 'get', path: '/v1/sandboxes/{id}/pty/stream', summary: 'Open a terminal (PTY) over a WebSocket',
    description: `First text frame {type:"startPty", request: PtyRequest}; output on channel 1 (stdout and stderr merged by the terminal), keystrokes as binary frames on channel 0, {type:"resize", cols, rows} to resize (1..1000 each, else {type:"error", code:"PTY_SIZE_INVALID"}); see StreamControl. ${STARTED_DOC}`,
  },
];

/** Register the WebSocket routes (the websocket plugin must be registered first). */
export function mountStreams(app: FastifyInstance, core: Core): void {
  const config: RouteConfig = { auth: true };
  app.get('/v1/sandboxes/:id/commands/stream', { websocket: true, config }, (socket, request) => commandStream(core, socket, request));
  app.get('/v1/sandboxes/:id/processes/:pid/stream', { websocket: true, config }, (socket, request) => processStream(core, socket, request));
  app.get('/v1/sandboxes/:id/pty/stream', { websocket: true, config }, (socket, request) => ptyStream(core, socket, request));
}
