/**
 * The command log: each command started over the API whose exit the daemon saw (a foreground run, a
 * command stream, a background command while its agent channel stayed open), with who started it, its
 * exit and its duration: the commands half of a sandbox's timeline. Recorded into `core.commandLog`
 * (buffered, never blocking: {@link BufferedLog}); the store keeps each sandbox's newest 1000, kept after
 * a kill and pruned with the events. Every command started over the API, whichever door it came through
 * (REST, the command stream, the SDK's `commands.run`, MCP, the CLI's `exec`), is also one `exec` telemetry
 * operation (see {@link watchCommand}).
 */
import { isRamifyError, type AgentExit } from '@ramify/contracts';
import type { Core } from '../context.js';
import { BufferedLog, type BufferedLogOptions } from '../log/buffered-log.js';
import { currentCallContext } from '../observe/call-context.js';
import type { CommandLogRecord } from '../ports/event-store.js';
import type { Store } from '../ports/store.js';
import type { TelemetryOperation } from '../ports/telemetry.js';
import { observing } from '../observe/operation.js';

/** The watch of a daemon that observes nothing (events off, no telemetry). */
const UNWATCHED: CommandWatch = { started: () => undefined, exited: () => undefined, abandoned: () => undefined };

/** Longest command line kept, characters (longer ones end in `…`). */
export const COMMAND_LOG_MAX_CMD = 1024;

export interface BufferedCommandLogOptions extends Omit<BufferedLogOptions<CommandLogRecord>, 'write' | 'name'> {
  store: Pick<Store, 'appendCommandLog'>;
}

/** Core's command log sink: `record(entry)` never throws or waits. */
export class BufferedCommandLog extends BufferedLog<CommandLogRecord, CommandLogRecord> {
  constructor(options: BufferedCommandLogOptions) {
    const { store, ...tunables } = options;
    super({ ...tunables, name: 'command log', write: (batch) => store.appendCommandLog(batch) }, (e) => e);
  }
}

/** One command being watched: tell it the pid once started and the exit once seen. */
export interface CommandWatch {
  started(pid: number): void;
  /** The process exited (`exit` as the agent reported it). */
  exited(exit: AgentExit): void;
  /** It could not start, or its channel closed before its exit was seen (`err`: why). */
  abandoned(err: unknown): void;
}

/**
 * Watch a command about to start in `sandboxId`, in the caller's call context (its API key). It is one
 * `exec` telemetry operation (a duration sample of `ramify_operation_duration_seconds{operation="exec"}`
 * and a span), begun now, before the sandbox is looked up:
 * - ended `ok` when its exit is seen (a non-zero exit is the command's result, not a failed operation);
 * - ended with the error's code when it could not start (`INVALID_STATE`, `CWD_NOT_FOUND`, ...);
 * - when its agent channel closes before its exit is seen (a pause, a kill, a lost agent): a `foreground`
 *   command (its caller waits for the exit) ends with that error (`AGENT_UNREACHABLE`); a `background` one
 *   is not ended at all: it may still be running (paused with its sandbox), so neither an outcome nor a
 *   duration is known, and it is not counted.
 * Only commands whose exit was seen are written to the command log.
 */
export function watchCommand(core: Pick<Core, 'commandLog' | 'telemetry' | 'clock' | 'options'>, sandboxId: string, cmd: string, mode: 'foreground' | 'background'): CommandWatch {
  if (!observing(core)) return UNWATCHED;
  const context = currentCallContext();
  const at = core.clock.now();
  const startedAt = performance.now();
  const operation: TelemetryOperation = core.telemetry.begin('exec', { 'ramify.sandbox_id': sandboxId, 'ramify.command_mode': mode }, context.operation);
  let pid: number | null = null;
  let exit: AgentExit | null = null;
  let done = false;
  const finish = (): void => {
    if (done || pid === null || exit === null) return;
    done = true;
    const durationMs = Math.round((performance.now() - startedAt) * 10) / 10;
    operation.end({ errorCode: null });
    if (core.options.events === 'off') return;
    core.commandLog.record({
      sandboxId, at, pid, cmd: cmd.length > COMMAND_LOG_MAX_CMD ? `${cmd.slice(0, COMMAND_LOG_MAX_CMD - 1)}…` : cmd,
      exitCode: exit.exitCode, signal: exit.signal, error: exit.error, durationMs, keyId: context.keyId,
    });
  };
  return {
    started: (p) => {
      pid = p;
      finish();
    },
    exited: (e) => {
      exit = e;
      finish();
    },
    abandoned: (err) => {
      if (done) return;
      done = true;
      if (mode === 'background' && pid !== null) return;
      operation.end({ errorCode: isRamifyError(err) ? err.code : 'INTERNAL' });
    },
  };
}
