/**
 * `ramify sandbox ps|attach|kill-process`: the processes of a sandbox (e.g. started with
 * `exec --background`): list them, follow one's output, kill them.
 */
import type { Command } from 'commander';
import { RamifyError, Sandbox, type Commands, type ProcessInfo } from '@ramify/sdk';
import { action, reportError, type CliEnv } from '../context.js';
import { intIn } from '../parse.js';
import { renderTable } from '../output/table.js';
import { formatBytes, formatRelative } from '../output/format.js';
import { EXIT_EXEC_FAILURE, followToExit, passThrough } from './sandbox-exec.js';

const parsePid = intIn(1, 2 ** 31 - 1);

/** `running`, `exited N`, `killed (SIGKILL)`, with ` (out of memory)` when the OOM guard or kernel killed it or one of its processes. */
function statusOf(p: ProcessInfo): string {
  if (p.running) return 'running';
  const how = p.signal ? `killed (${p.signal})` : `exited ${p.exitCode ?? '?'}`;
  return p.error === 'oom' ? `${how} (out of memory)` : how;
}

/** How an exited process ended: `exit code 3`, `killed by SIGKILL`. */
function exitOf(p: ProcessInfo): string {
  return p.signal ? `killed by ${p.signal}` : `exit code ${p.exitCode ?? '?'}`;
}

function processTable(procs: ProcessInfo[]): string {
  if (procs.length === 0) return 'no processes';
  return renderTable(['PID', 'STATUS', 'STARTED', 'OUTPUT', 'COMMAND'], procs.map((p) => [
    String(p.pid), statusOf(p), formatRelative(p.startedAt), formatBytes(p.stdoutBytes + p.stderrBytes), p.cmd.replace(/\s+/g, ' '),
  ]));
}

/** Register `ps`, `attach` and `kill-process` on the `sandbox` command. */
export function registerProcesses(sandbox: Command, env: CliEnv): void {
  sandbox.command('ps').argument('<id>', 'sandbox id')
    .description('list the processes started through the API (running and recently exited) with their status')
    .action(action(env, async (ctx, id: string) => {
      const procs = await Sandbox.fromId(id, ctx.connection).commands.list();
      ctx.output(procs, () => processTable(procs));
    }));

  sandbox.command('attach').argument('<id>', 'sandbox id').argument('<pid>', "process id (from 'ramify sandbox ps' or 'exec --background')", parsePid)
    .description("replay a process's output from the start, follow it until it exits, exit with its exit code")
    .addHelpText('after', `
Ctrl-C detaches (the process keeps running). With --json nothing is streamed; the CommandResult is
printed once the process exited. Exit codes as for 'ramify sandbox exec'.`)
    .action(action(env, async (ctx, id: string, pid: number) => {
      try {
        const output = passThrough(ctx);
        const handle = await Sandbox.fromId(id, ctx.connection).commands.connect(pid, output.callbacks);
        await followToExit(ctx, handle, 'detach', output);
      } catch (err) {
        ctx.env.exitCode = reportError(err, ctx.env, ctx.json, EXIT_EXEC_FAILURE);
      }
    }));

  sandbox.command('kill-process').argument('<id>', 'sandbox id').argument('<pids...>', 'process ids', (v: string, prev: number[] = []) => [...prev, parsePid(v)])
    .description("SIGKILL processes (their whole process groups) in a sandbox; the sandbox keeps running")
    .addHelpText('after', `
Prints '<pid> killed' per process. A process that had already exited is left alone, exit code 0
(nothing to do, as 'ramify sandbox kill' on a killed sandbox): '<pid> had already exited (exit code 3)'
or '(killed by SIGKILL)'. A pid the sandbox does not know (see 'ramify sandbox ps ID') is
PROCESS_NOT_FOUND, exit code 1, once the other pids were handled (printed first; with --json the error says it).
--json: {"sandboxId", "killed": [pid, ...], "alreadyExited": [process info as in 'ps --json', ...]}.`)
    .action(action(env, async (ctx, id: string, pids: number[]) => {
      const outcome = await killProcesses(Sandbox.fromId(id, ctx.connection).commands, pids);
      const lines = [...outcome.killed.map((pid) => `${pid} killed`), ...outcome.alreadyExited.map((p) => `${p.pid} had already exited (${exitOf(p)})`)];
      if (outcome.missing.length > 0) {
        // Human output says what was done before the error; --json keeps stdout empty, the error says it.
        if (!ctx.json && lines.length > 0) ctx.print(lines.join('\n'));
        const done = ctx.json && lines.length > 0 ? ` (${lines.join('; ')})` : '';
        throw new RamifyError('PROCESS_NOT_FOUND', `no process ${outcome.missing.join(', ')} in sandbox ${id}${done}`);
      }
      ctx.output({ sandboxId: id, killed: outcome.killed, alreadyExited: outcome.alreadyExited }, () => lines.join('\n'));
    }));
}

/** What {@link killProcesses} did with each pid. */
interface KillOutcome {
  killed: number[];
  /** Processes that had exited before the kill (nothing to do), with their exit status. */
  alreadyExited: ProcessInfo[];
  /** Pids the sandbox does not know (never started, or forgotten). */
  missing: number[];
}

/**
 * SIGKILL each of `pids`, telling an exited process from an unknown pid. The daemon answers
 * PROCESS_NOT_FOUND (`kill` resolves false) for both, so the process list is read first (exited ones are
 * not signalled) and again after a refused kill (the process may have exited in between).
 */
async function killProcesses(commands: Commands, pids: number[]): Promise<KillOutcome> {
  const outcome: KillOutcome = { killed: [], alreadyExited: [], missing: [] };
  const exitedIn = (procs: ProcessInfo[], pid: number): ProcessInfo | undefined => procs.find((p) => p.pid === pid && !p.running);
  const before = await commands.list();
  const refused: number[] = [];
  for (const pid of pids) {
    const exited = exitedIn(before, pid);
    if (exited) outcome.alreadyExited.push(exited);
    else if (await commands.kill(pid)) outcome.killed.push(pid);
    else refused.push(pid);
  }
  const after = refused.length > 0 ? await commands.list() : [];
  for (const pid of refused) {
    const exited = exitedIn(after, pid);
    if (exited) outcome.alreadyExited.push(exited);
    else outcome.missing.push(pid);
  }
  return outcome;
}
