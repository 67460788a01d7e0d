/**
 * Child-process helpers for host networking commands. Everything runs from argv arrays; data for
 * `ip -batch` and `nft -f` goes on stdin, never into a shell string.
 */
import { spawn } from 'node:child_process';
import { RamifyError } from '@ramify/contracts';

export interface RunResult {
  stdout: string;
  stderr: string;
  code: number;
}

/** How a command is run. */
export interface RunOptions {
  /** Its environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
}

/**
 * Run `argv` with optional stdin text; resolves with output and exit code (never rejects on non-zero).
 * Rejects `RUNTIME_ERROR` only when the program cannot be started (e.g. not installed).
 */
export function run(argv: string[], input?: string, options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const [cmd, ...args] = argv;
    const child = spawn(cmd!, args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], ...(options.env ? { env: options.env } : {}) });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', (err) => reject(new RamifyError('RUNTIME_UNAVAILABLE', `cannot run ${cmd}: ${err.message}`)));
    child.on('close', (code) => resolve({ stdout, stderr, code: code ?? -1 }));
    if (input !== undefined) child.stdin!.end(input);
  });
}

/** Like {@link run} but rejects `RUNTIME_ERROR` with the command's stderr on a non-zero exit. */
export async function runChecked(argv: string[], input?: string, options: RunOptions = {}): Promise<string> {
  const r = await run(argv, input, options);
  if (r.code !== 0) {
    throw new RamifyError('RUNTIME_ERROR', `${argv.slice(0, 4).join(' ')} failed (exit ${r.code}): ${r.stderr.trim() || r.stdout.trim()}`);
  }
  return r.stdout;
}
