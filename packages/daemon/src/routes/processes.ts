/**
 * Command, terminal and process routes (HTTP): run, start a terminal, list, stdin (streamed raw bytes),
 * close stdin, resize, signal, wait. The streaming variants are WebSocket routes (streams/).
 */
import type { Readable } from 'node:stream';
import { CommandRequest, CommandResult, ProcessInfo, PtyInfo, PtyRequest, RamifyError, ResizeRequest, SignalRequest } from '@ramify/contracts';
import { closeStdin, createPty, listProcesses, resizePty, runCommand, sendStdin, signalProcess, waitProcess } from '@ramify/core';
import { z } from 'zod';
import { IdParams, NoBody, PidParams, route, type RouteSpec } from '../http/route.js';

const ExitInfo = z.object({ exitCode: z.number().int().nullable(), signal: z.string().nullable(), error: z.string().nullable() });

export const processRoutes: RouteSpec[] = [
  route({
    operation: 'runCommand', summary: 'Run a command (foreground: waits for exit; background: returns its pid)',
    description: 'A foreground result keeps the head of each stream, at most the daemon\'s maxOutputBytes bytes of it (ramify serve --max-output-bytes; default 33554432, 32 MiB; '
      + 'a cut inside a UTF-8 character leaves that character out). truncated says whether either stream was cut, capture has the limit and, per stream, '
      + 'keptBytes and totalBytes (what the process wrote). The exit code is the process\'s either way. To get every byte, run it over GET /v1/sandboxes/{id}/commands/stream.',
    params: IdParams, body: CommandRequest, response: z.union([CommandResult, z.object({ pid: z.number().int() })]),
    handler: async ({ core, params, body }) => runCommand(core, params.id, body),
  }),
  route({
    operation: 'createPty', summary: 'Start a terminal (a process on a pseudo-terminal); returns its pid and size',
    description: 'Default size 80x24, each side 1..1000 (else 400 PTY_SIZE_INVALID); default command /bin/bash -i -l; TERM=xterm-256color and LANG=C.UTF-8 unless envs say otherwise. '
      + 'Its output (stdout and stderr merged) waits in the agent\'s buffer: read it with GET /v1/sandboxes/{id}/processes/{pid}/stream, type with POST .../stdin, resize with POST .../resize. '
      + 'Or open it over the WebSocket GET /v1/sandboxes/{id}/pty/stream.',
    params: IdParams, body: PtyRequest, response: PtyInfo, status: 201,
    handler: async ({ core, params, body }) => createPty(core, params.id, body),
  }),
  route({
    operation: 'resizeProcess', summary: "Resize a terminal's window (the program gets SIGWINCH)",
    description: 'Errors: 400 PTY_SIZE_INVALID (each side 1..1000); 404 PROCESS_NOT_FOUND; 409 NOT_A_PTY (started without a terminal); 409 PROCESS_EXITED.',
    params: PidParams, body: ResizeRequest, status: 204,
    handler: async ({ core, params, body }) => resizePty(core, params.id, params.pid, body),
  }),
  route({
    operation: 'listProcesses', summary: 'List processes', params: IdParams, response: z.object({ processes: z.array(ProcessInfo) }),
    handler: async ({ core, params }) => ({ processes: await listProcesses(core, params.id) }),
  }),
  route({
    operation: 'writeStdin', summary: "Write raw bytes (application/octet-stream) to a process's stdin",
    description: 'Errors: 409 PROCESS_EXITED (details pid, exitCode, signal) once the process has exited; 409 INVALID_STATE when it was started without stdin or its stdin is closed; 404 PROCESS_NOT_FOUND.',
    params: PidParams, body: 'raw', status: 204,
    handler: async ({ core, params, body }) => {
      if (!isStream(body)) throw new RamifyError('BAD_REQUEST', 'send stdin as raw bytes with Content-Type: application/octet-stream');
      for await (const chunk of body) await sendStdin(core, params.id, params.pid, chunk as Uint8Array);
    },
  }),
  route({
    operation: 'closeStdin', summary: "Close a process's stdin",
    params: PidParams, body: NoBody.optional(), status: 204,
    handler: async ({ core, params }) => closeStdin(core, params.id, params.pid),
  }),
  route({
    operation: 'signalProcess', summary: "Signal a process's group",
    params: PidParams, body: SignalRequest, status: 204,
    handler: async ({ core, params, body }) => signalProcess(core, params.id, params.pid, body.signal),
  }),
  route({
    operation: 'waitProcess', summary: 'Wait for a process to exit (long poll)', params: PidParams, response: ExitInfo,
    handler: async ({ core, params }) => waitProcess(core, params.id, params.pid),
  }),
];

/** True for a request body the raw parser passed through. */
export function isStream(body: unknown): body is Readable {
  return typeof body === 'object' && body !== null && typeof (body as Readable).pipe === 'function' && Symbol.asyncIterator in body;
}
