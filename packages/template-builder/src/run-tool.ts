/**
 * Running a host tool (mmdebstrap, cc, cp) from an argv array with its output streamed as lines.
 */
import { RamifyError } from '@ramify/contracts';
import { spawn } from 'node:child_process';
import { LineSplitter, LineTail } from './lines.js';

export interface RunToolOptions {
  /** Build step the tool belongs to, named in errors (`details.step`). */
  step: string;
  /** Every output line (stdout and stderr, interleaved as they come). */
  onLine?: (line: string) => void;
  /** Kills the tool (SIGTERM) when aborted. */
  signal?: AbortSignal;
  /** Debian package that provides the tool, named when it is missing. */
  debianPackage?: string;
}

/**
 * Run `argv` with stdin from /dev/null. Resolves when it exits 0. Rejects `TEMPLATE_BUILD_FAILED`
 * with the last output lines when it exits otherwise, cannot be started (missing tool), or is aborted.
 */
export async function runTool(argv: readonly string[], options: RunToolOptions): Promise<void> {
  const [command, ...args] = argv;
  const tail = new LineTail(20);
  const onLine = (line: string): void => {
    tail.add(line);
    options.onLine?.(line);
  };
  const out = new LineSplitter(onLine);
  const err = new LineSplitter(onLine);
  const result = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; spawnError?: Error }>((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], signal: options.signal, killSignal: 'SIGTERM' });
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    // Without a pid it never started ('close' may not follow). With one (e.g. an abort), wait for
    // 'close': the tool must be gone before the caller deletes what it was writing (mmdebstrap mounts
    // /proc, /sys and /dev inside its target while it runs).
    child.on('error', (spawnError) => {
      if (child.pid === undefined) resolve({ code: null, signal: null, spawnError });
    });
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
  out.end();
  err.end();
  if (result.code === 0) return;
  const details = { step: options.step, command, exitCode: result.code, signal: result.signal, outputTail: tail.toString() };
  if (options.signal?.aborted) throw new RamifyError('TEMPLATE_BUILD_FAILED', `${options.step}: cancelled`, details);
  if (result.spawnError) {
    const hint = options.debianPackage ? ` (install the Debian package ${options.debianPackage})` : '';
    throw new RamifyError('TEMPLATE_BUILD_FAILED', `${options.step}: cannot run ${command}: ${result.spawnError.message}${hint}`, details);
  }
  const how = result.signal ? `was killed by ${result.signal}` : `exited with code ${result.code}`;
  throw new RamifyError('TEMPLATE_BUILD_FAILED', `${options.step}: ${command} ${how}${tail.toString() ? `:\n${tail.toString()}` : ''}`, details);
}
