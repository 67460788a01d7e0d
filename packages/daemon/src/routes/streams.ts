/**
 * WebSocket streams (framing: `StreamControl` in contracts' api.ts). Binary frames carry bytes, first
 * byte the channel (0 stdin, 1 stdout, 2 stderr); text frames carry JSON control messages.
 * - `/v1/sandboxes/:id/commands/stream`: first text frame `{type:'start', request}` → `{type:'started', pid,
 *   maxOutputBytes}`, then output frames, then `{type:'exit', ...}` and close 1000.
 * - `/v1/sandboxes/:id/processes/:pid/stream?stdout=N&stderr=N`: `{type:'started', pid, maxOutputBytes}`,
 *   replay from the offsets, live output, `exit`. Both accept stdin frames and `{type:'closeStdin'}`.
 * `started` is always the first frame (output that comes sooner waits for it). Streams carry every byte;
 * `maxOutputBytes` is the limit of command results (clients apply it to the results they collect).
 * A failure before the stream starts is `{type:'error', code, message}` then close 1008 (client error) or
 * 1011 (server error). When the sandbox's agent channel closes under a stream (pause, kill), the socket
 * closes with 1001 and no exit frame: re-attach from the offsets once it runs again. Closing the socket
 * never kills the process.
 */
import { CommandRequest, RamifyError, StreamChannel, isRamifyError, type AgentExit, type StreamControl } from '@ramify/contracts';
import { agentFor, attachProcess, closeStdin, sendStdin, startCommand, type Core, type StreamHandlers } from '@ramify/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { z } from 'zod';
import { writeAudit } from '../http/audit.js';
import type { ExtraOperation } from '../http/openapi.js';
import { IdParams, PidParams, type RouteConfig } from '../http/route.js';
import { validate } from '../http/validate.js';

const StartMessage = z.strictObject({ type: z.literal('start'), request: CommandRequest });
const StdinControl = z.strictObject({ type: z.literal('closeStdin') });
const Offsets = z.strictObject({ stdout: z.coerce.number().int().min(0).default(0), stderr: z.coerce.number().int().min(0).default(0) });

const STARTED_DOC = 'The first server frame is {type:"started", pid, maxOutputBytes}: maxOutputBytes is the per-stream limit of command results, bytes (the stream itself carries every byte; clients apply it to the CommandResult they collect).';
export const streamDocs: ExtraOperation[] = [
  { method: 'get', path: '/v1/sandboxes/{id}/commands/stream', summary: 'Run a command over a WebSocket', description: `First text frame {type:"start", request: CommandRequest}; see StreamControl. ${STARTED_DOC}` },
  { method: 'get', path: '/v1/sandboxes/{id}/processes/{pid}/stream', summary: "Re-attach to a process's output", description: `Query stdout=N&stderr=N byte offsets; replay, then live output; see StreamControl. ${STARTED_DOC}` },
];

/** Register both WebSocket routes (the websocket plugin must be registered first). */
export function mountStreams(app: FastifyInstance, core: Core): void {
  const config: RouteConfig = { auth: true };
  app.get('/v1/sandboxes/:id/commands/stream', { websocket: true, config }, (socket, request) => commandStream(core, socket, request));
  app.get('/v1/sandboxes/:id/processes/:pid/stream', { websocket: true, config }, (socket, request) => processStream(core, socket, request));
}

/** The stream counts as use of its sandbox (idle auto-pause) until the socket closes. */
function holdWhileOpen(core: Core, socket: WebSocket, request: FastifyRequest): void {
  const id = (request.params as { id?: unknown }).id;
  if (typeof id !== 'string') return;
  const release = core.activity.hold(id);
  socket.once('close', release);
}

function commandStream(core: Core, socket: WebSocket, request: FastifyRequest): void {
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

function processStream(core: Core, socket: WebSocket, request: FastifyRequest): void {
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

/** Output handlers of one stream, and {@link open} to send `started` and let them write. */
interface StreamOutput {
  handlers: StreamHandlers;
  /** Send `started`, then what the handlers produced meanwhile; from then on they write at once. */
  open(started: Extract<StreamControl, { type: 'started' }>): void;
}

/**
 * Output handlers writing frames to `socket`; exit ends the stream with close 1000. Until {@link
 * StreamOutput.open} they queue (a replay or a quick command's output arrives before the start or
 * attach resolves), so `started` is the first frame. When the agent channel closes first (a pause, a
 * kill, a lost channel) the socket is closed with 1001 and no exit frame, so the client re-attaches from
 * its offsets once the sandbox runs again.
 */
function outputTo(socket: WebSocket): StreamOutput {
  let queued: Array<() => void> | null = [];
  const later = (step: () => void): void => (queued ? void queued.push(step) : step());
  const frame = (channel: number) => (chunk: Uint8Array) => {
    const bytes = Buffer.concat([Buffer.from([channel]), chunk]);
    later(() => {
      if (socket.readyState === socket.OPEN) socket.send(bytes);
    });
  };
  return {
    handlers: {
      onStdout: frame(StreamChannel.stdout),
      onStderr: frame(StreamChannel.stderr),
      onExit: (exit: AgentExit) => later(() => {
        send(socket, { type: 'exit', exitCode: exit.exitCode, signal: exit.signal, error: exit.error });
        if (socket.readyState === socket.OPEN) socket.close(1000, 'exited');
      }),
      onDisconnect: () => {
        if (socket.readyState === socket.OPEN) socket.close(1001, 'agent channel closed; re-attach later');
      },
    },
    open: (started) => {
      send(socket, started);
      const steps = queued ?? [];
      queued = null;
      for (const step of steps) step();
    },
  };
}

async function handleInput(core: Core, socket: WebSocket, id: string, pid: number, data: WebSocket.RawData, isBinary: boolean): Promise<void> {
  try {
    const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    if (isBinary) {
      if (bytes[0] !== StreamChannel.stdin) throw new RamifyError('BAD_REQUEST', `binary frames from the client must use channel ${StreamChannel.stdin} (stdin)`);
      await sendStdin(core, id, pid, bytes.subarray(1));
    } else {
      validate(StdinControl, parseJson(bytes.toString('utf8')), 'body');
      await closeStdin(core, id, pid);
    }
  } catch (err) {
    const { code, message } = describe(core, err);
    send(socket, { type: 'error', code, message });
  }
}

function fail(core: Core, socket: WebSocket, err: unknown): void {
  const { code, message, status } = describe(core, err);
  send(socket, { type: 'error', code, message });
  if (socket.readyState === socket.OPEN) socket.close(status < 500 ? 1008 : 1011, code);
}

function describe(core: Core, err: unknown): { code: string; message: string; status: number } {
  if (isRamifyError(err)) return { code: err.code, message: err.message, status: statusOf(err) };
  core.logger.error('stream failed', { error: err instanceof Error ? err.stack : String(err) });
  return { code: 'INTERNAL', message: 'internal error', status: 500 };
}

const statusOf = (err: unknown): number => (isRamifyError(err) ? new RamifyError(err.code, '').status : 500);
const codeOf = (err: unknown): string => (isRamifyError(err) ? err.code : 'INTERNAL');

function send(socket: WebSocket, message: StreamControl): void {
  if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new RamifyError('BAD_REQUEST', 'text frames must be JSON control messages');
  }
}

/** Run async steps one after another in arrival order (a failed step is logged by itself and does not stop the next). */
function serial(): (step: () => Promise<void>) => Promise<void> {
  let tail = Promise.resolve();
  return (step) => (tail = tail.then(step).catch(() => undefined));
}
