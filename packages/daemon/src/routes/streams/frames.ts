/**
 * What every WebSocket stream shares (framing: `StreamControl` in contracts' api.ts): output handlers that
 * write frames and hold them until `started`, input frames (stdin, closeStdin, resize), errors, the
 * activity hold. Binary frames carry bytes, first byte the channel (0 stdin, 1 stdout, 2 stderr); text
 * frames carry JSON control messages. A failure before the stream starts is `{type:'error', code,
 * message}` then close 1008 (client error) or 1011 (server error). When the sandbox's agent channel
 * closes under a stream (pause, kill), the socket closes with 1001 and no exit frame: re-attach from the
 * offsets once it runs again. Closing the socket never kills the process.
 */
import { RamifyError, ResizeRequest, StreamChannel, isRamifyError, type AgentExit, type StreamControl } from '@ramify/contracts';
import { closeStdin, resizePty, sendStdin, type Core, type StreamHandlers } from '@ramify/core';
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { z } from 'zod';
import { validate } from '../../http/validate.js';

const InputControl = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('closeStdin') }),
  ResizeRequest.extend({ type: z.literal('resize') }),
]);

export const STARTED_DOC = 'The first server frame is {type:"started", pid, maxOutputBytes}: maxOutputBytes is the per-stream limit of command results, bytes (the stream itself carries every byte; clients apply it to the CommandResult they collect).';

/** The stream counts as use of its sandbox (idle auto-pause) until the socket closes. */
export function holdWhileOpen(core: Core, socket: WebSocket, request: FastifyRequest): void {
  const id = (request.params as { id?: unknown }).id;
  if (typeof id !== 'string') return;
  const release = core.activity.hold(id);
  socket.once('close', release);
}

/** Output handlers of one stream, and {@link open} to send `started` and let them write. */
export interface StreamOutput {
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
export function outputTo(socket: WebSocket): StreamOutput {
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

export async function handleInput(core: Core, socket: WebSocket, id: string, pid: number, data: WebSocket.RawData, isBinary: boolean): Promise<void> {
  try {
    const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    if (isBinary) {
      if (bytes[0] !== StreamChannel.stdin) throw new RamifyError('BAD_REQUEST', `binary frames from the client must use channel ${StreamChannel.stdin} (stdin)`);
      await sendStdin(core, id, pid, bytes.subarray(1));
    } else {
      const control = validate(InputControl, parseJson(bytes.toString('utf8')), 'body');
      if (control.type === 'resize') await resizePty(core, id, pid, control);
      else await closeStdin(core, id, pid);
    }
  } catch (err) {
    const { code, message } = describe(core, err);
    send(socket, { type: 'error', code, message });
  }
}

export function fail(core: Core, socket: WebSocket, err: unknown): void {
  const { code, message, status } = describe(core, err);
  send(socket, { type: 'error', code, message });
  if (socket.readyState === socket.OPEN) socket.close(status < 500 ? 1008 : 1011, code);
}

function describe(core: Core, err: unknown): { code: string; message: string; status: number } {
  if (isRamifyError(err)) return { code: err.code, message: err.message, status: statusOf(err) };
  core.logger.error('stream failed', { error: err instanceof Error ? err.stack : String(err) });
  return { code: 'INTERNAL', message: 'internal error', status: 500 };
}

export const statusOf = (err: unknown): number => (isRamifyError(err) ? new RamifyError(err.code, '').status : 500);
export const codeOf = (err: unknown): string => (isRamifyError(err) ? err.code : 'INTERNAL');

function send(socket: WebSocket, message: StreamControl): void {
  if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new RamifyError('BAD_REQUEST', 'text frames must be JSON control messages');
  }
}

/** Run async steps one after another in arrival order (a failed step is logged by itself and does not stop the next). */
export function serial(): (step: () => Promise<void>) => Promise<void> {
  let tail = Promise.resolve();
  return (step) => (tail = tail.then(step).catch(() => undefined));
}
