/**
 * Use-cases: terminals (PTYs). A terminal is a process started on a pseudo-terminal with a size (E2B's
 * shape): the agent's process table, output buffer, stdin, signals and wait serve it as they serve
 * commands, so attach, input, kill and wait are the command use-cases; here are starting one and
 * resizing it.
 */
import { DEFAULT_PTY_SIZE, checkPtySize, type AgentStartOptions, type PtyInfo, type PtyRequest, type PtySize } from '@ramify/contracts';
import type { Core } from '../context.js';
import { agentFor } from './agent-access.js';
import type { StreamHandlers, StreamSubscription } from './commands.js';

/** What a terminal runs when the request names nothing: a login shell. */
export const DEFAULT_PTY_COMMAND = '/bin/bash -i -l';

/**
 * Map a terminal request to the agent's start options (size checked, default 80x24).
 * @throws RamifyError `PTY_SIZE_INVALID`.
 */
export function toPtyStartOptions(request: PtyRequest): AgentStartOptions & { pty: PtySize } {
  const pty = checkPtySize({ cols: request.cols ?? DEFAULT_PTY_SIZE.cols, rows: request.rows ?? DEFAULT_PTY_SIZE.rows });
  return {
    cmd: request.cmd ?? DEFAULT_PTY_COMMAND,
    ...(request.cwd !== undefined ? { cwd: request.cwd } : {}),
    ...(request.envs !== undefined ? { envs: request.envs } : {}),
    timeoutMs: request.timeoutMs ?? 0,
    ...(request.user !== undefined ? { user: request.user } : {}),
    pty,
  };
}

/**
 * Start a terminal and return at once; its output waits in the agent's buffer for `attachProcess`.
 * @throws RamifyError `PTY_SIZE_INVALID`, `SANDBOX_NOT_FOUND` (also a killed sandbox), `SANDBOX_FAILED`,
 *   `INVALID_STATE` (paused), `CWD_NOT_FOUND`, `BAD_REQUEST` (unknown user).
 */
export async function createPty(core: Core, sandboxId: string, request: PtyRequest): Promise<PtyInfo> {
  const options = toPtyStartOptions(request);
  const { pid } = await (await agentFor(core, sandboxId)).start(options, {});
  return { pid, ...options.pty };
}

/**
 * Start a terminal whose output is streamed to `handlers` (the WebSocket terminal stream).
 * @throws RamifyError as {@link createPty}.
 */
export async function startPty(core: Core, sandboxId: string, request: PtyRequest, handlers: StreamHandlers): Promise<PtyInfo & StreamSubscription> {
  const options = toPtyStartOptions(request);
  const session = await agentFor(core, sandboxId);
  const unwatch = handlers.onDisconnect ? core.sessions.whenClosed(session, handlers.onDisconnect) : () => undefined;
  try {
    const { pid } = await session.start(options, handlers);
    return { pid, ...options.pty, detach: unwatch };
  } catch (err) {
    unwatch();
    throw err;
  }
}

/**
 * Resize a terminal; its foreground process group gets SIGWINCH.
 * @throws RamifyError `PTY_SIZE_INVALID`, `PROCESS_NOT_FOUND`, `NOT_A_PTY`, `PROCESS_EXITED`, and as {@link createPty}.
 */
export async function resizePty(core: Core, sandboxId: string, pid: number, size: PtySize): Promise<void> {
  const checked = checkPtySize(size);
  await (await agentFor(core, sandboxId)).resize(pid, checked);
}
