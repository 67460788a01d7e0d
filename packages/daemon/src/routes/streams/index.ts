/**
 * The WebSocket streams, one file per kind: commands (start and stream a command), processes
 * (re-attach to any process, commands and terminals alike), terminals (start and stream a PTY) and
 * watches (a directory's events).
 * frames.ts has what they share: framing, input, errors.
 */
import { ROUTES, type OperationId } from '@ramify/contracts';
import type { Core } from '@ramify/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import type { ExtraOperation } from '../../http/openapi.js';
import type { RouteConfig } from '../../http/route.js';
import { scopeOf } from '../../http/scope.js';
import { commandStream } from './commands.js';
import { EVENT_STREAM_DOC, eventStream } from './events.js';
import { inCallContext } from '../../http/route.js';
import { fail, STARTED_DOC } from './frames.js';
import { processStream } from './processes.js';
import { ptyStream } from './terminals.js';
import { watchStream } from './watch.js';

export const streamDocs: ExtraOperation[] = [
  { operation: 'streamCommand', summary: 'Run a command over a WebSocket', description: `First text frame {type:"start", request: CommandRequest}; see StreamControl. ${STARTED_DOC}` },
  { operation: 'streamProcess', summary: "Re-attach to a process's output", description: `Query stdout=N&stderr=N byte offsets; replay, then live output; see StreamControl. A terminal also takes {type:"resize", cols, rows}. ${STARTED_DOC}` },
  {
    operation: 'streamPty', summary: 'Open a terminal (PTY) over a WebSocket',
    description: `First text frame {type:"startPty", request: PtyRequest}; output on channel 1 (stdout and stderr merged by the terminal), keystrokes as binary frames on channel 0, {type:"resize", cols, rows} to resize (1..1000 each, else {type:"error", code:"PTY_SIZE_INVALID"}); see StreamControl. ${STARTED_DOC}`,
  },
  {
    operation: 'watchDir', summary: 'Watch a directory over a WebSocket',
    description: 'Query path=P (an existing directory, else FILE_NOT_FOUND or NOT_A_DIRECTORY) and recursive=true|false. Text frames (WatchControl): {type:"watching", watchId, path, recursive, from} first, then {type:"events", events:[{seq, type: create|write|remove|rename|chmod, name, path, isDir}]} in order ({type:"overflow", seq, reason} marks where events are missing), {type:"end", reason} when the watch ends. Send {type:"stop"} to stop it. Closing the socket leaves the watch running: re-attach with /files/watch/{watchId}?from=N.',
  },
  {
    operation: 'rewatchDir', summary: 'Listen to a watch again',
    description: 'Query from=N: the sequence number after the last event received. Replays what the agent still holds (after an overflow marker when it no longer holds N), then live events; frames as /files/watch. 404 WATCH_NOT_FOUND once the watch ended or expired (a minute with nobody listening).',
  },
  { operation: 'streamEvents', summary: "Follow the team's events live over a WebSocket", description: EVENT_STREAM_DOC },
];

type Serve = (core: Core, socket: WebSocket, request: FastifyRequest) => void;

/** Each WebSocket route of the table and what serves it. */
const STREAMS: ReadonlyArray<[OperationId, Serve]> = [
  ['streamCommand', commandStream],
  ['streamProcess', processStream],
  ['streamPty', ptyStream],
  ['watchDir', watchStream],
  ['rewatchDir', watchStream],
  ['streamEvents', eventStream],
];

/**
 * Register the WebSocket routes (the websocket plugin must be registered first). Each is scoped to its
 * sandbox's team by the scope hook: a refusal there (another team's sandbox, or an unknown one) is sent
 * as the stream's error frame, as any failure before a stream starts.
 */
export function mountStreams(app: FastifyInstance, core: Core): void {
  for (const [operation, serve] of STREAMS) {
    const { path } = ROUTES[operation];
    const config: RouteConfig = { auth: true, scope: scopeOf(path, true) };
    app.get(path, { websocket: true, config }, (socket, request) => {
      if (request.ramify.scopeError) return fail(core, socket, request.ramify.scopeError);
      // In the caller's context: what the stream starts (a command) is the key's doing.
      inCallContext(request, core, () => serve(core, socket, request));
    });
  }
}
