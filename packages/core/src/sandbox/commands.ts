/**
 * Use-cases: run commands and manage processes in a running sandbox (pass-throughs to its agent).
 */
import { RamifyError, ResultCapture, type AgentExit, type AgentOutputHandlers, type AgentStartOptions, type CommandRequest, type CommandResult, type ProcessInfo, type StreamOffsets } from '@ramify/contracts';
import type { Core } from '../context.js';
import { agentFor } from './agent-access.js';
import { watchCommand } from './command-log.js';

/** Default deadline of a foreground command, ms (background commands have none unless asked). */
export const DEFAULT_FOREGROUND_TIMEOUT_MS = 60_000;
/** After `wait` resolved, how long to wait for the exit event carrying the last output, ms. */
const EXIT_EVENT_GRACE_MS = 1_000;

/** Map an API command request to the agent's start options. */
export function toStartOptions(request: CommandRequest, defaultTimeoutMs: number): AgentStartOptions {
  return {
    cmd: request.cmd,
    ...(request.cwd !== undefined ? { cwd: request.cwd } : {}),
    ...(request.envs !== undefined ? { envs: request.envs } : {}),
    timeoutMs: request.timeoutMs ?? defaultTimeoutMs,
    stdin: request.stdin ?? false,
    ...(request.user !== undefined ? { user: request.user } : {}),
  };
}

/**
 * Run a command. Foreground: resolves at exit with its output (non-zero exits resolve too): the head of
 * each stream, at most `core.options.maxOutputBytes` bytes, with `truncated` and `capture` saying what was
 * cut (see `ResultCapture` in contracts). Background: resolves with the pid at once; its output stays in
 * the agent's buffer for `attachProcess`.
 * @throws RamifyError `SANDBOX_NOT_FOUND`, `INVALID_STATE`, `CWD_NOT_FOUND`, `AGENT_UNREACHABLE` (channel lost mid-run).
 */
export async function runCommand(core: Core, sandboxId: string, request: CommandRequest): Promise<CommandResult | { pid: number }> {
  // A foreground run is foreground work until its exit: deferrable background work waits (lifecycle/foreground.ts).
  return request.background ? run(core, sandboxId, request) : core.foreground.run(() => run(core, sandboxId, request));
}

async function run(core: Core, sandboxId: string, request: CommandRequest): Promise<CommandResult | { pid: number }> {
  const watch = watchCommand(core, sandboxId, request.cmd, request.background ? 'background' : 'foreground');
  try {
    const session = await agentFor(core, sandboxId);
    if (request.background) {
      const started = await session.start(toStartOptions(request, 0), { onExit: watch.exited });
      watch.started(started.pid);
      return started;
    }
    const capture = new ResultCapture(core.options.maxOutputBytes);
    let onExit!: (exit: AgentExit) => void;
    const exited = new Promise<AgentExit>((resolve) => (onExit = resolve));
    const { pid } = await session.start(toStartOptions(request, DEFAULT_FOREGROUND_TIMEOUT_MS), {
      onStdout: (chunk) => capture.push('stdout', chunk),
      onStderr: (chunk) => capture.push('stderr', chunk),
      onExit,
    });
    watch.started(pid);
    const exit = await Promise.race([
      exited,
      session.wait(pid).then((waited) => Promise.race([exited, core.clock.sleep(EXIT_EVENT_GRACE_MS).then(() => waited)])),
    ]);
    capture.end();
    watch.exited(exit);
    return { pid, exitCode: exit.exitCode, signal: exit.signal, error: exit.error, ...capture.result() };
  } catch (err) {
    watch.abandoned(err);
    throw err;
  }
}

/** Output handlers of a stream, plus a notice that the agent channel under it closed (pause, kill, loss). */
export interface StreamHandlers extends AgentOutputHandlers {
  /** The channel closed before `onExit`; the process may still run (re-attach with the offsets later). */
  onDisconnect?: (reason: string) => void;
}

/** A started or attached stream: stop watching the channel when the consumer goes away. */
export interface StreamSubscription {
  /** Unsubscribe from output and from `onDisconnect`. */
  detach: () => void;
}

/**
 * Start a command whose output is streamed to `handlers` (WebSocket streams).
 * @throws RamifyError as {@link runCommand}.
 */
export async function startCommand(core: Core, sandboxId: string, request: CommandRequest, handlers: StreamHandlers): Promise<{ pid: number } & StreamSubscription> {
  const watch = watchCommand(core, sandboxId, request.cmd, request.background ? 'background' : 'foreground');
  let session: Awaited<ReturnType<typeof agentFor>>;
  try {
    session = await agentFor(core, sandboxId);
  } catch (err) {
    watch.abandoned(err);
    throw err;
  }
  const onDisconnect = (reason: string): void => {
    watch.abandoned(new RamifyError('AGENT_UNREACHABLE', reason));
    handlers.onDisconnect?.(reason);
  };
  const unwatch = core.sessions.whenClosed(session, onDisconnect);
  try {
    const onExit = (exit: AgentExit): void => {
      watch.exited(exit);
      handlers.onExit?.(exit);
    };
    const { pid } = await session.start(toStartOptions(request, request.background ? 0 : DEFAULT_FOREGROUND_TIMEOUT_MS), { ...handlers, onExit });
    watch.started(pid);
    return { pid, detach: unwatch };
  } catch (err) {
    watch.abandoned(err);
    unwatch();
    throw err;
  }
}

/** Re-attach to a process's output from byte offsets (replay, then live). @throws RamifyError `PROCESS_NOT_FOUND` and as above. */
export async function attachProcess(
  core: Core,
  sandboxId: string,
  pid: number,
  from: StreamOffsets,
  handlers: StreamHandlers,
): Promise<{ from: StreamOffsets } & StreamSubscription> {
  const session = await agentFor(core, sandboxId);
  const unwatch = handlers.onDisconnect ? core.sessions.whenClosed(session, handlers.onDisconnect) : () => undefined;
  try {
    const attached = await session.attach(pid, from, handlers);
    return {
      from: attached.from,
      detach: () => {
        unwatch();
        attached.detach();
      },
    };
  } catch (err) {
    unwatch();
    throw err;
  }
}

/** Processes the agent knows (running and recently exited). */
export async function listProcesses(core: Core, sandboxId: string): Promise<ProcessInfo[]> {
  // Agents in images made before `error` was reported leave it out.
  return (await (await agentFor(core, sandboxId)).listProcesses()).map((p) => ({ ...p, error: p.error ?? null }));
}

/**
 * Write bytes to a process's stdin (it must have been started with `stdin: true`).
 * @throws RamifyError `PROCESS_EXITED` (details: `pid`, `exitCode`, `signal`) when the process has exited,
 *   `INVALID_STATE` when it was started without stdin or its stdin is closed, `PROCESS_NOT_FOUND`, and as {@link runCommand}.
 */
export async function sendStdin(core: Core, sandboxId: string, pid: number, data: Uint8Array): Promise<void> {
  await (await agentFor(core, sandboxId)).sendStdin(pid, data);
}

/** Close a process's stdin (EOF). @throws RamifyError as {@link sendStdin}. */
export async function closeStdin(core: Core, sandboxId: string, pid: number): Promise<void> {
  await (await agentFor(core, sandboxId)).closeStdin(pid);
}

/** Signal the process's group. */
export async function signalProcess(core: Core, sandboxId: string, pid: number, signal: NodeJS.Signals): Promise<void> {
  await (await agentFor(core, sandboxId)).signal(pid, signal);
}

/** Resolves when the process exits (long poll). */
export async function waitProcess(core: Core, sandboxId: string, pid: number): Promise<AgentExit> {
  return (await agentFor(core, sandboxId)).wait(pid);
}
