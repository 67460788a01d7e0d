/**
 * The WebSocket streams, one file per kind: commands (start and stream a command), processes
 * (re-attach to any process, commands and terminals alike), terminals (start and stream a PTY) and
 * watches (a directory's events).
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
import { watchStream } from './watch.js';

export const streamDocs: ExtraOperation[] = [
  { method: 'get', path: '/v1/sandboxes/{id}/commands/stream', summary: 'Run a command over a WebSocket', description: `First text frame {type:"start", request: CommandRequest}; see StreamControl. ${STARTED_DOC}` },
  { method: 'get', path: '/v1/sandboxes/{id}/processes/{pid}/stream', summary: "Re-attach to a process's output", description: `Query stdout=N&stderr=N byte offsets; replay, then live output; see StreamControl. A terminal also takes {type:"resize", cols, rows}. ${STARTED_DOC}` },
  {
    method: 'get', path: '/v1/sandboxes/{id}/pty/stream', summary: 'Open a terminal (PTY) over a WebSocket',
    description: `First text frame {type:"startPty", request: PtyRequest}; output on channel 1 (stdout and stderr merged by the terminal), keystrokes as binary frames on channel 0, {type:"resize", cols, rows} to resize (1..1000 each, else {type:"error", code:"PTY_SIZE_INVALID"}); see StreamControl. ${STARTED_DOC}`,
  },
  {
    method: 'get', path: '/v1/sandboxes/{id}/files/watch', summary: 'Watch a directory over a WebSocket',
    description: 'Query path=P (an existing directory, else FILE_NOT_FOUND or NOT_A_DIRECTORY) and recursive=true|false. Text frames (WatchControl): {type:"watching", watchId, path, recursive, from} first, then {type:"events", events:[{seq, type: create|write|remove|rename|chmod, name, path, isDir}]} in order ({type:"overflow", seq, reason} marks where events are missing), {type:"end", reason} when the watch ends. Send {type:"stop"} to stop it. Closing the socket leaves the watch running: re-attach with /files/watch/{watchId}?from=N.',
  },
  {
    method: 'get', path: '/v1/sandboxes/{id}/files/watch/{watchId}', summary: 'Listen to a watch again',
    description: 'Query from=N: the sequence number after the last event received. Replays what the agent still holds (after an overflow marker when it no longer holds N), then live events; frames as /files/watch. 404 WATCH_NOT_FOUND once the watch ended or expired (a minute with nobody listening).',
  },
];

/** Register the WebSocket routes (the websocket plugin must be registered first). */
export function mountStreams(app: FastifyInstance, core: Core): void {
  const config: RouteConfig = { auth: true };
  app.get('/v1/sandboxes/:id/commands/stream', { websocket: true, config }, (socket, request) => commandStream(core, socket, request));
  app.get('/v1/sandboxes/:id/processes/:pid/stream', { websocket: true, config }, (socket, request) => processStream(core, socket, request));
  app.get('/v1/sandboxes/:id/pty/stream', { websocket: true, config }, (socket, request) => ptyStream(core, socket, request));
  app.get('/v1/sandboxes/:id/files/watch', { websocket: true, config }, (socket, request) => watchStream(core, socket, request));
  app.get('/v1/sandboxes/:id/files/watch/:watchId', { websocket: true, config }, (socket, request) => watchStream(core, socket, request));
}
