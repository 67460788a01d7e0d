/**
 * Command tools: run a shell command in the foreground (output cut for the model, the whole of it saved
 * in the sandbox), start one in the background, read a process's output from offsets, kill it.
 */
import { z } from 'zod';
import { CommandExitError, type CommandResult, type Sandbox } from '@ramify/sdk';
import { cutForModel } from '../cut.js';
import { envs, path, pid, sandboxId } from './args.js';
import { readProcessOutput } from './process-output.js';
import { defineTool, type Tool } from './tool.js';

/** Default bytes of each stream a result shows the model. */
export const DEFAULT_MODEL_OUTPUT_BYTES = 16_384;
/** Most bytes of each stream a result may show (`maxOutputBytes`). */
export const MAX_MODEL_OUTPUT_BYTES = 1 << 20;
/**
 * Default deadline of `command_run`, ms: under the 60 s MCP clients usually wait for a tool call, so
 * the model gets the result (with `error: 'timeout'`) rather than a client timeout.
 */
export const DEFAULT_COMMAND_TIMEOUT_MS = 50_000;
/** Where `command_run` saves the whole of a stream it had to cut, inside the sandbox. */
export const FULL_OUTPUT_DIR = '/tmp/ramify-mcp';

const command = z.string().min(1).max(1 << 20).describe("shell command line, run with /bin/bash -c (pipes, &&, redirections work), e.g. python3 -c 'print(6*7)'");
const cwd = path.optional().describe('working directory (must exist); default /root');
const maxOutputBytes = z.number().int().min(256).max(MAX_MODEL_OUTPUT_BYTES).default(DEFAULT_MODEL_OUTPUT_BYTES)
  .describe(`most bytes of each of stdout and stderr to show (default ${DEFAULT_MODEL_OUTPUT_BYTES}, max ${MAX_MODEL_OUTPUT_BYTES}); longer output is cut in the middle with a marker`);

/** How a result ended, in words. */
function ending(r: CommandResult, timeoutMs: number): string {
  if (r.error === 'timeout') return `killed at its deadline (timeoutMs ${timeoutMs}): raise timeoutMs, or use command_start and command_output`;
  if (r.error === 'oom') return `${r.signal ? `killed by ${r.signal}` : `exit code ${r.exitCode}`}: the sandbox ran out of memory (create it with more memoryMB)`;
  return r.signal ? `killed by ${r.signal}` : `exit code ${r.exitCode}`;
}

/** One stream of a result for the model: cut when long, the whole saved in the sandbox first. */
async function presentStream(sbx: Sandbox, r: CommandResult, stream: 'stdout' | 'stderr', limit: number): Promise<{ text: string; cut: boolean; bytes: number; fullOutputPath: string | null }> {
  const text = r[stream];
  const totalBytes = r.capture?.[stream].totalBytes ?? Buffer.byteLength(text);
  const dropped = r.capture && r.capture[stream].keptBytes < totalBytes ? `; the daemon kept only the first ${r.capture[stream].keptBytes} of ${totalBytes} bytes` : '';
  if (Buffer.byteLength(text) <= limit) return { text: dropped ? `${text}\n[ramify: output cut${dropped}]` : text, cut: dropped !== '', bytes: totalBytes, fullOutputPath: null };
  const saved = `${FULL_OUTPUT_DIR}/${r.pid}.${stream}`;
  let where: string;
  let fullOutputPath: string | null = saved;
  try {
    await sbx.files.write(saved, text);
    where = `the whole ${stream} is in the sandbox at ${saved} (read it with files_read and offset)${dropped}`;
  } catch (err) {
    fullOutputPath = null;
    where = `the whole ${stream} could not be saved (${err instanceof Error ? err.message : String(err)}); rerun with a redirect (> file)${dropped}`;
  }
  return { text: cutForModel(text, limit, where).text, cut: true, bytes: totalBytes, fullOutputPath };
}

const commandRun = defineTool({
  name: 'command_run',
  title: 'Run a command',
  description: `Run a shell command in a sandbox and wait for it (default deadline ${DEFAULT_COMMAND_TIMEOUT_MS} ms); returns exit code, stdout and stderr (long output is cut, the whole saved in the sandbox).`,
  input: z.strictObject({
    sandboxId,
    command,
    timeoutMs: z.number().int().min(1).max(3_600_000).default(DEFAULT_COMMAND_TIMEOUT_MS)
      .describe(`kill the command after this long, ms (default ${DEFAULT_COMMAND_TIMEOUT_MS}: MCP clients often give up on a call at 60 s; for longer jobs use command_start)`),
    cwd,
    envs: envs.optional().describe('extra environment variables of this command'),
    maxOutputBytes,
  }),
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  async run(args, ctx) {
    const sbx = ctx.sandbox(args.sandboxId);
    let result: CommandResult;
    try {
      result = await sbx.commands.run(args.command, { timeoutMs: args.timeoutMs, ...(args.cwd !== undefined ? { cwd: args.cwd } : {}), ...(args.envs !== undefined ? { envs: args.envs } : {}) });
    } catch (err) {
      if (!(err instanceof CommandExitError)) throw err;
      result = err.result;
    }
    const stdout = await presentStream(sbx, result, 'stdout', args.maxOutputBytes);
    const stderr = await presentStream(sbx, result, 'stderr', args.maxOutputBytes);
    const text = [`${ending(result, args.timeoutMs)} (pid ${result.pid})`, `--- stdout (${stdout.bytes} bytes) ---`, stdout.text, `--- stderr (${stderr.bytes} bytes) ---`, stderr.text].join('\n');
    return {
      text,
      data: {
        sandboxId: args.sandboxId, pid: result.pid, exitCode: result.exitCode, signal: result.signal, error: result.error,
        stdout: stdout.text, stderr: stderr.text, stdoutBytes: stdout.bytes, stderrBytes: stderr.bytes,
        truncated: { stdout: stdout.cut, stderr: stderr.cut },
        fullOutput: { stdout: stdout.fullOutputPath, stderr: stderr.fullOutputPath },
      },
    };
  },
});

const commandStart = defineTool({
  name: 'command_start',
  title: 'Start a background command',
  description: 'Start a shell command in the background (servers, long builds) and return its pid at once; read its output with command_output, stop it with command_kill.',
  input: z.strictObject({
    sandboxId,
    command,
    timeoutMs: z.number().int().min(0).max(86_400_000).default(0).describe('kill it after this long, ms; 0 (default) = no deadline'),
    cwd,
    envs: envs.optional().describe('extra environment variables of this command'),
  }),
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  async run(args, ctx) {
    const handle = await ctx.sandbox(args.sandboxId).commands.run(args.command, {
      background: true, timeoutMs: args.timeoutMs, ...(args.cwd !== undefined ? { cwd: args.cwd } : {}), ...(args.envs !== undefined ? { envs: args.envs } : {}),
    });
    await handle.disconnect();
    return { text: `started pid ${handle.pid}; read its output with command_output (sandboxId ${args.sandboxId}, pid ${handle.pid})`, data: { sandboxId: args.sandboxId, pid: handle.pid } };
  },
});

const commandOutput = defineTool({
  name: 'command_output',
  title: "Read a process's output",
  description: "Read a process's stdout and stderr from byte offsets (pass back the next offsets to read on), whether it still runs and its exit code; waitMs waits for it to exit.",
  input: z.strictObject({
    sandboxId,
    pid,
    stdoutOffset: z.number().int().min(0).default(0).describe('byte offset of stdout to read from (the nextStdoutOffset of the previous call)'),
    stderrOffset: z.number().int().min(0).default(0).describe('byte offset of stderr to read from (the nextStderrOffset of the previous call)'),
    maxBytes: z.number().int().min(256).max(MAX_MODEL_OUTPUT_BYTES).default(DEFAULT_MODEL_OUTPUT_BYTES).describe(`most bytes of each stream to return (default ${DEFAULT_MODEL_OUTPUT_BYTES}, max ${MAX_MODEL_OUTPUT_BYTES})`),
    waitMs: z.number().int().min(0).max(50_000).default(0).describe('wait up to this long for a running process to exit, ms (max 50000); 0 returns at once'),
  }),
  hints: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(args, ctx) {
    const out = await readProcessOutput(ctx.sandbox(args.sandboxId), args.pid, args);
    const { info } = out;
    const state = info.running ? 'running' : info.error === 'timeout' ? 'killed at its deadline' : info.signal ? `killed by ${info.signal}` : `exited with code ${info.exitCode}`;
    const more = out.nextStdoutOffset < info.stdoutBytes || out.nextStderrOffset < info.stderrBytes;
    const text = [
      `pid ${info.pid} ${state}; stdout ${args.stdoutOffset}-${out.nextStdoutOffset} of ${info.stdoutBytes} bytes, stderr ${args.stderrOffset}-${out.nextStderrOffset} of ${info.stderrBytes}${more ? ' (more: call again with the next offsets)' : ''}`,
      '--- stdout ---', out.stdout, '--- stderr ---', out.stderr,
    ].join('\n');
    return {
      text,
      data: {
        sandboxId: args.sandboxId, pid: info.pid, running: info.running, exitCode: info.exitCode, signal: info.signal, error: info.error,
        stdout: out.stdout, stderr: out.stderr, nextStdoutOffset: out.nextStdoutOffset, nextStderrOffset: out.nextStderrOffset,
        stdoutBytes: info.stdoutBytes, stderrBytes: info.stderrBytes, more,
      },
    };
  },
});

const commandKill = defineTool({
  name: 'command_kill',
  title: 'Kill a process',
  description: 'Kill a process and its children (SIGKILL to its process group); killed is false when it had already exited or does not exist.',
  input: z.strictObject({ sandboxId, pid }),
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  async run(args, ctx) {
    const killed = await ctx.sandbox(args.sandboxId).commands.kill(args.pid);
    return { text: killed ? `killed pid ${args.pid}` : `pid ${args.pid} was not running`, data: { sandboxId: args.sandboxId, pid: args.pid, killed } };
  },
});

/** The command tools. */
export const commandTools: Tool[] = [commandRun, commandStart, commandOutput, commandKill];
