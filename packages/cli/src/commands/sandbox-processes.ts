/**
 * `ramify sandbox ps|attach|kill-process`: the processes of a sandbox (e.g. started with
 * `exec --background`): list them, follow one's output, kill them.
 */
import type { Command } from 'commander';
import { RamifyError, Sandbox, type ProcessInfo } from '@ramify/sdk';
import { action, reportError, type CliEnv } from '../context.js';
import { intIn } from '../parse.js';
import { renderTable } from '../output/table.js';
import { formatBytes, formatRelative } from '../output/format.js';
import { EXIT_EXEC_FAILURE, followToExit, passThrough } from './sandbox-exec.js';

const parsePid = intIn(1, 2 ** 31 - 1);

/** `running`, `exited N`, `killed (SIGKILL)`. */
function statusOf(p: ProcessInfo): string {
  if (p.running) return 'running';
  return p.signal ? `killed (${p.signal})` : `exited ${p.exitCode ?? '?'}`;
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
        const handle = await Sandbox.fromId(id, ctx.connection).commands.connect(pid, passThrough(ctx));
        await followToExit(ctx, handle, 'detach');
      } catch (err) {
        ctx.env.exitCode = reportError(err, ctx.env, ctx.json, EXIT_EXEC_FAILURE);
      }
    }));

  sandbox.command('kill-process').argument('<id>', 'sandbox id').argument('<pids...>', 'process ids', (v: string, prev: number[] = []) => [...prev, parsePid(v)])
    .description("SIGKILL processes (their whole process groups) in a sandbox; the sandbox keeps running")
    .action(action(env, async (ctx, id: string, pids: number[]) => {
      const commands = Sandbox.fromId(id, ctx.connection).commands;
      const killed: number[] = [];
      const missing: number[] = [];
      for (const pid of pids) (await commands.kill(pid) ? killed : missing).push(pid);
      if (missing.length > 0) {
        throw new RamifyError('PROCESS_NOT_FOUND', `no process ${missing.join(', ')} in sandbox ${id}${killed.length ? ` (killed ${killed.join(', ')})` : ''}`);
      }
      ctx.output({ sandboxId: id, killed }, () => killed.map((pid) => `${pid} killed`).join('\n'));
    }));
}
