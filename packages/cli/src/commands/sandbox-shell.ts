/**
 * `ramify sandbox shell ID`: an interactive terminal in a sandbox, joined to this one (raw mode, size
 * and resizes forwarded), ending with the remote shell's exit code. The session itself is
 * `terminal/shell-session.ts`; this module checks the sandbox's state first and words the errors.
 */
import { constants } from 'node:os';
import type { Command } from 'commander';
import { NotFoundError, RamifyError, Sandbox, isRamifyError, type SandboxInfo } from '@ramify/sdk';
import { EXIT_USAGE, action, reportError, type CliContext, type CliEnv } from '../context.js';
import { keyValue } from '../parse.js';
import { LocalTerminal, NotATerminalError } from '../terminal/local-terminal.js';
import { runShellSession } from '../terminal/shell-session.js';
import { EXIT_EXEC_FAILURE, exitCodeOf } from './sandbox-exec.js';

interface ShellOptions {
  cmd?: string;
  cwd?: string;
  env?: Record<string, string>;
  user?: string;
  resume?: boolean;
}

/**
 * Why a sandbox in `info.state` cannot take a shell, as a typed error, or undefined when it can (or may:
 * `creating` and `resuming` are left to the PTY call). `during`: the session was open when this was read.
 */
function stateError(info: SandboxInfo, during: boolean): RamifyError | undefined {
  const { id, state } = info;
  switch (state) {
    case 'paused':
    case 'pausing':
      return new RamifyError('SANDBOX_PAUSED', during
        ? `sandbox ${id} was paused while the shell was open; 'ramify sandbox shell --resume ${id}' resumes it and opens a new shell`
        : `sandbox ${id} is paused: 'ramify sandbox shell --resume ${id}' resumes it and opens the shell (or 'ramify sandbox resume ${id}' first)`, { id, state });
    case 'killed':
    case 'killing':
      return new RamifyError('SANDBOX_KILLED', during
        ? `sandbox ${id} was killed while the shell was open; the shell ended with it`
        : `sandbox ${id} was killed: there is no shell to open in it (create one: 'ramify sandbox create')`, { id, state });
    case 'error':
      return new RamifyError('SANDBOX_FAILED', `sandbox ${id} failed: ${info.error ?? 'no reason recorded'}; the only call left is 'ramify sandbox kill ${id}'`, { id, state, reason: info.error });
    default:
      return undefined;
  }
}

/** The sandbox's info; an unknown id is `SANDBOX_NOT_FOUND` with a pointer to `sandbox list`. */
async function infoOf(ctx: CliContext, id: string): Promise<SandboxInfo> {
  try {
    return await Sandbox.getInfo(id, ctx.connection);
  } catch (err) {
    if (err instanceof NotFoundError && err.code === 'SANDBOX_NOT_FOUND') {
      throw new RamifyError('SANDBOX_NOT_FOUND', `no sandbox '${id}' (see 'ramify sandbox list --all')`, { id });
    }
    throw err;
  }
}

/** Make sure the sandbox can take a shell: resume it when paused and `resume` is set; else throw why not. */
async function prepare(ctx: CliContext, id: string, resume: boolean): Promise<void> {
  const info = await infoOf(ctx, id);
  const refused = stateError(info, false);
  if (refused?.code === 'SANDBOX_PAUSED' && resume) {
    await ctx.spin(`resuming ${id}`, () => Sandbox.resume(id, ctx.connection));
    ctx.note(`ramify: resumed ${id}`);
    return;
  }
  if (refused) throw refused;
}

/** After a session failed: say what became of the sandbox when that explains it (killed, paused, failed). */
async function explain(ctx: CliContext, id: string, err: unknown): Promise<unknown> {
  if (!isRamifyError(err) || !['SANDBOX_NOT_FOUND', 'PROCESS_NOT_FOUND', 'INVALID_STATE', 'SANDBOX_FAILED', 'AGENT_UNREACHABLE'].includes(err.code)) return err;
  const info = await Sandbox.getInfo(id, ctx.connection).catch(() => undefined);
  return (info && stateError(info, true)) ?? err;
}

async function shell(ctx: CliContext, id: string, opts: ShellOptions): Promise<void> {
  // Refused before anything is changed (no resume) when there is no terminal to hand over.
  const term = LocalTerminal.open(ctx.env.stdin, ctx.env.stdout, [ctx.env.stdout, ctx.env.stderr]);
  await prepare(ctx, id, opts.resume === true);
  const sbx = Sandbox.fromId(id, ctx.connection);
  // After an abnormal end, what ramify says starts on a line of its own, not after the remote prompt.
  const freshLine = (): void => void (term.atLineStart || ctx.env.stderr.write('\n'));
  const outcome = await runShellSession(sbx, term, { cmd: opts.cmd, cwd: opts.cwd, envs: opts.env, user: opts.user, notes: ctx.env.stderr })
    .catch(async (err: unknown) => {
      freshLine();
      throw await explain(ctx, id, err);
    });
  if (outcome.kind === 'signal') {
    freshLine();
    // The terminal is restored and the remote shell killed; leave now rather than wait for the stream's end.
    process.exit(128 + (constants.signals[outcome.signal] ?? 0));
  }
  ctx.env.exitCode = exitCodeOf(outcome.result);
}

/** Register `shell` on the `sandbox` command. */
export function registerShell(sandbox: Command, env: CliEnv): void {
  sandbox.command('shell').argument('<id>', 'sandbox id')
    .description("open an interactive shell in a sandbox (a terminal of this terminal's size); exit with its exit code")
    .option('--cmd <command>', "what to run instead of the login shell (/bin/bash -i -l), a shell command line, e.g. 'python3'")
    .option('--cwd <dir>', 'working directory (default /root)')
    .option('-e, --env <KEY=VALUE>', 'environment variable (repeatable), over TERM=xterm-256color, LANG=C.UTF-8 and the sandbox\'s', keyValue)
    .option('-u, --user <user>', 'run as this user')
    .option('--resume', 'if the sandbox is paused, resume it first (without it a paused sandbox is refused with SANDBOX_PAUSED)')
    .addHelpText('after', `
This terminal is put in raw mode: every key goes to the sandbox as typed, Ctrl-C (interrupts the remote
command, never ramify), Ctrl-D and Ctrl-Z included. The remote terminal starts at this terminal's size and
follows its resizes. Leave with 'exit' (or Ctrl-D at the prompt).
Exit code: the remote shell's ('exit 7' exits 7); 128+N when it was killed by signal N; ${EXIT_EXEC_FAILURE} when ramify
itself failed (sandbox unknown, paused, killed meanwhile; daemon unreachable), with CODE: message on stderr;
${EXIT_USAGE} when stdin is not a terminal (scripts: 'ramify sandbox exec ID -- CMD', -i to pipe stdin).
If the sandbox is paused while the shell is open, the shell waits and goes on once it is resumed
(keystrokes typed meanwhile are dropped, with a note). SIGTERM, SIGHUP (this terminal closing) or SIGINT
from outside kill the remote shell and exit 128+N. This terminal's mode is restored on every exit.`)
    .action(action(env, async (ctx, id: string, opts: ShellOptions) => {
      try {
        await shell(ctx, id, opts);
      } catch (err) {
        ctx.env.exitCode = reportError(err, ctx.env, ctx.json, err instanceof NotATerminalError ? EXIT_USAGE : EXIT_EXEC_FAILURE);
      }
    }));
}
