/** `ramify sandbox exec ID -- cmd args...`: run a command, stream its output, exit with its exit code. */
import { constants } from 'node:os';
import { Option, type Command } from 'commander';
import { CommandExitError, Sandbox, type CommandHandle, type CommandResult, type OutputCallbacks } from '@ramify/sdk';
import { action, reportError, type CliContext, type CliEnv } from '../context.js';
import { commandLine, keyValue, parseDuration } from '../parse.js';

/** Exit code when ramify itself failed during `exec` (distinct from the command's own codes, as in `docker run`). */
export const EXIT_EXEC_FAILURE = 125;
/** Exit code when the command was killed at its deadline (as in coreutils `timeout`). */
export const EXIT_EXEC_TIMEOUT = 124;
/** Exit code when whatever read ramify's output went away (`| head`): 128 + SIGPIPE, as a shell reports it. */
export const EXIT_BROKEN_PIPE = 128 + constants.signals.SIGPIPE;

/** The exit code `exec` ends with for a finished command. */
export function exitCodeOf(result: CommandResult): number {
  if (result.error === 'timeout') return EXIT_EXEC_TIMEOUT;
  if (result.signal) return 128 + (constants.signals[result.signal as NodeJS.Signals] ?? 0);
  return result.exitCode ?? EXIT_EXEC_FAILURE;
}

interface ExecOptions {
  cwd?: string;
  env?: Record<string, string>;
  timeout?: number;
  user?: string;
  stdin?: boolean;
  background?: boolean;
}

/** What `exec --background --json` prints: the started process. */
export interface BackgroundStart {
  sandboxId: string;
  pid: number;
  cmd: string;
}

/** What Ctrl-C / SIGTERM (or the reader of the output going away) does while the CLI follows a process. */
export type InterruptAction = 'kill-remote' | 'detach';

/**
 * Where a followed process's output goes: `callbacks` copy its bytes to this process's stdout/stderr (none
 * with `--json`); `broken` resolves when a write fails because the reader went away (EPIPE: `| head`).
 */
export interface OutputPassThrough {
  callbacks: OutputCallbacks;
  broken: Promise<void>;
}

/** See {@link OutputPassThrough}. */
export function passThrough(ctx: CliContext): OutputPassThrough {
  if (ctx.json) return { callbacks: {}, broken: new Promise<void>(() => undefined) };
  let gone = false;
  let onBroken: () => void = () => undefined;
  const broken = new Promise<void>((resolve) => (onBroken = resolve));
  const sink = (stream: NodeJS.WritableStream): ((b: Uint8Array) => void) => {
    // A write error (EPIPE and the like) arrives as an 'error' event or a throw: the output has nowhere to go.
    stream.on('error', () => {
      gone = true;
      onBroken();
    });
    return (b) => {
      if (gone) return;
      try {
        stream.write(b);
      } catch {
        gone = true;
        onBroken();
      }
    };
  };
  return { callbacks: { onStdoutBytes: sink(ctx.env.stdout), onStderrBytes: sink(ctx.env.stderr) }, broken };
}

/**
 * Follow `handle` to its exit: its output was already routed to the terminal by `output`'s callbacks.
 * Ctrl-C / SIGTERM: `kill-remote` kills the remote process group once (a second Ctrl-C leaves at once);
 * `detach` leaves at once and the process keeps running. When the output's reader goes away (`| head`),
 * the same action runs without asking and the exit code is {@link EXIT_BROKEN_PIPE}. Otherwise sets the
 * exit code from the result ({@link exitCodeOf}) and, with `--json`, prints the {@link CommandResult}.
 * Throws the API's error when the process cannot be followed.
 */
export async function followToExit(ctx: CliContext, handle: CommandHandle, onInterrupt: InterruptAction, output: OutputPassThrough): Promise<void> {
  let interrupted = 0;
  const onSignal = (): void => {
    interrupted += 1;
    if (onInterrupt === 'kill-remote' && interrupted === 1) void handle.kill().catch(() => undefined);
    else process.exit(130);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const finished = handle.wait().catch((err: unknown) => {
    if (err instanceof CommandExitError) return err.result;
    throw err;
  });
  let outcome: CommandResult | 'broken-pipe';
  try {
    outcome = await Promise.race([finished, output.broken.then(() => 'broken-pipe' as const)]);
    if (outcome === 'broken-pipe') {
      if (onInterrupt === 'kill-remote') {
        await handle.kill().catch(() => undefined);
        await finished.catch(() => undefined);
      } else {
        // As Ctrl-C's detach: leave at once (after disconnecting, the handle's wait() would long-poll
        // for an exit that may never come).
        await handle.disconnect().catch(() => undefined);
        process.exit(EXIT_BROKEN_PIPE);
      }
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  if (outcome === 'broken-pipe') {
    ctx.env.exitCode = EXIT_BROKEN_PIPE;
    return;
  }
  if (ctx.json) {
    ctx.output(outcome, () => '');
    for (const line of truncationNotes(outcome)) ctx.note(line);
  } else if (outcome.error === 'oom') {
    ctx.note(`ramify: the sandbox ran out of memory: its OOM killer killed ${outcome.signal ? 'the command' : 'a process of the command'} (pid ${outcome.pid}); the sandbox keeps running`);
  }
  ctx.env.exitCode = exitCodeOf(outcome);
}

/**
 * One line per stream a result holds only the head of: the bytes kept and written, and where the limit
 * comes from. Only `--json` prints the result's text; streamed output is never cut.
 */
export function truncationNotes(result: CommandResult): string[] {
  if (!result.truncated) return [];
  const { limitBytes } = result.capture;
  return (['stdout', 'stderr'] as const)
    .filter((stream) => result.capture[stream].totalBytes > result.capture[stream].keptBytes)
    .map((stream) => {
      const { keptBytes, totalBytes } = result.capture[stream];
      return `ramify: ${stream} in the result was cut: it holds the first ${keptBytes} of the ${totalBytes} bytes written `
        + `(the daemon keeps at most ${limitBytes} bytes of each stream in a result: ramify serve --max-output-bytes); without --json all of it is streamed`;
    });
}

async function exec(ctx: CliContext, id: string, argv: string[], opts: ExecOptions): Promise<void> {
  const sbx = Sandbox.fromId(id, ctx.connection);
  const cmd = commandLine(argv);
  const common = { cwd: opts.cwd, envs: opts.env, timeoutMs: opts.timeout ?? 0, user: opts.user };
  if (opts.background) {
    // Started detached; the handle's output stream is not needed: the process keeps running on its own.
    const handle = await sbx.commands.run(cmd, { ...common, background: true });
    await handle.disconnect();
    const started: BackgroundStart = { sandboxId: id, pid: handle.pid, cmd };
    ctx.output(started, () => String(handle.pid));
    return;
  }
  const output = passThrough(ctx);
  const handle: CommandHandle = await sbx.commands.run(cmd, {
    ...common,
    background: true,
    ...(opts.stdin ? { stdin: ctx.env.stdin as AsyncIterable<Uint8Array> } : {}),
    ...output.callbacks,
  });
  try {
    await followToExit(ctx, handle, 'kill-remote', output);
  } finally {
    // The command may exit before stdin's EOF: stop reading so the CLI can end.
    if (opts.stdin) (ctx.env.stdin as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
  }
}

/** Register `exec` on the `sandbox` command. */
export function registerExec(sandbox: Command, env: CliEnv): void {
  sandbox.command('exec').argument('<id>', 'sandbox id').argument('<command...>', 'command to run (put it after --)')
    .description('run a command in a sandbox, stream its output, exit with its exit code')
    .usage('[options] <id> -- <command...>')
    .option('--cwd <dir>', 'working directory (default /root)')
    .option('-e, --env <KEY=VALUE>', 'environment variable (repeatable)', keyValue)
    .option('--timeout <duration>', 'kill the command after this long, e.g. 30s, 10m (default: no deadline)', parseDuration)
    .option('-u, --user <user>', 'run as this user')
    .addOption(new Option('-i, --stdin', "forward this process's stdin to the command (until EOF)").conflicts('background'))
    .option('-b, --background', 'start the command and return at once, printing its pid (--json: {sandboxId, pid, cmd}); it keeps running')
    .addHelpText('after', `
One argument after -- is run as a shell command line as-is (ramify sandbox exec ID -- 'ls | wc -l');
several are quoted one by one (ramify sandbox exec ID -- python3 -c 'print(1)').
Output is streamed as raw bytes, all of it. With --json nothing is streamed; the CommandResult is printed
at the end: it keeps at most the daemon's limit of each stream (32 MiB unless 'ramify serve
--max-output-bytes' says otherwise), "truncated": true and "capture" ({limitBytes, stdout/stderr:
{keptBytes, totalBytes}}) say when it was cut, and a note on stderr says so too.
Exit code: the command's; 128+N when killed by signal N (137 when the sandbox ran out of memory and its OOM
killer chose it: a note on stderr says so); ${EXIT_EXEC_TIMEOUT} at its deadline; ${EXIT_EXEC_FAILURE} when ramify itself failed.
Ctrl-C kills the remote command; a second Ctrl-C exits at once.
With --background (no deadline unless --timeout): list it with 'ramify sandbox ps ID', follow its output
(replayed from the start) with 'ramify sandbox attach ID PID', stop it with 'ramify sandbox kill-process ID PID'.`)
    .action(action(env, async (ctx, id: string, argv: string[], opts: ExecOptions) => {
      try {
        await exec(ctx, id, argv, opts);
      } catch (err) {
        ctx.env.exitCode = reportError(err, ctx.env, ctx.json, EXIT_EXEC_FAILURE);
      }
    }));
}
