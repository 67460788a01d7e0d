/**
 * What every command action gets: the global options turned into SDK connection options, the output
 * mode (human or `--json`), the process's streams, and the exit code to end with.
 */
import type { Command } from 'commander';
import { CommanderError } from 'commander';
import { isRamifyError, type ConnectionOpts } from '@ramify/sdk';
import { StatusLine, type StatusStream } from './output/spinner.js';

/** Options every command accepts (declared on the root program). */
export interface GlobalOptions {
  apiUrl?: string;
  apiKey?: string;
  json?: boolean;
}

/** The process around the CLI (real streams in `main.ts`; tests run the built CLI as a child process). */
export interface CliEnv {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & StatusStream;
  stdin: NodeJS.ReadableStream;
  /** Exit code to end with when the action returns normally (exec sets the command's). */
  exitCode: number;
}

/** Exit code when ramify itself failed (API error, network, bad file). */
export const EXIT_FAILURE = 1;
/** Exit code for usage errors (unknown option, bad argument). */
export const EXIT_USAGE = 2;

export class CliContext {
  readonly connection: ConnectionOpts;
  readonly json: boolean;

  constructor(global: GlobalOptions, readonly env: CliEnv) {
    this.connection = {
      ...(global.apiUrl !== undefined ? { apiUrl: global.apiUrl } : {}),
      ...(global.apiKey !== undefined ? { apiKey: global.apiKey } : {}),
    };
    this.json = global.json === true;
  }

  /** Write a line to stdout. */
  print(text: string): void {
    this.env.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /** Write a line to stderr (notes for humans; never data). */
  note(text: string): void {
    this.env.stderr.write(`${text}\n`);
  }

  /** `--json`: print `value` as JSON; otherwise print `human()`. */
  output(value: unknown, human: () => string): void {
    if (this.json) this.print(JSON.stringify(value, jsonReplacer, 2));
    else {
      const text = human();
      if (text) this.print(text);
    }
  }

  /** Run `fn` with a progress line on stderr (TTY only, human mode only, after a second). */
  async spin<T>(label: string, fn: () => Promise<T>): Promise<T> {
    const status = this.json ? undefined : new StatusLine(label, this.env.stderr);
    try {
      return await fn();
    } finally {
      status?.stop();
    }
  }
}

/** JSON.stringify replacer: `-Infinity` scores and other non-finite numbers become strings. */
export function jsonReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'number' && !Number.isFinite(value) ? String(value) : value;
}

/** Wrap an action: build the context from the command's options (globals included) and run it. */
export function action<A extends unknown[]>(env: CliEnv, fn: (ctx: CliContext, ...args: A) => Promise<void>): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    const command = args[args.length - 1] as Command;
    const ctx = new CliContext(command.optsWithGlobals<GlobalOptions>(), env);
    await fn(ctx, ...(args.slice(0, -1) as A));
  };
}

/**
 * Report a failure on stderr (`CODE: message`, or an error body with `--json`) and return the exit code.
 * Commander's usage errors were already printed by commander in human mode (exit 2); with `--json` they
 * are reported here as `VALIDATION_FAILED` error bodies (commander's own output is muted, see `createProgram`).
 */
export function reportError(err: unknown, env: CliEnv, json: boolean, exitCode = EXIT_FAILURE): number {
  if (err instanceof CommanderError) {
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
    if (json) env.stderr.write(`${JSON.stringify({ error: { code: 'VALIDATION_FAILED', message: err.message.replace(/^error: /, '') } })}\n`);
    return EXIT_USAGE;
  }
  const code = isRamifyError(err) ? err.code
    : typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : 'INTERNAL';
  const message = err instanceof Error ? err.message.replace(new RegExp(`^${code}: `), '') : String(err);
  const details = isRamifyError(err) ? err.details : undefined;
  if (json) env.stderr.write(`${JSON.stringify({ error: details === undefined ? { code, message } : { code, message, details } })}\n`);
  else env.stderr.write(`ramify: ${code}: ${withoutRequestParts(message, details)}\n${NEXT_STEPS[code] ? `next: ${NEXT_STEPS[code]}\n` : ''}`);
  return exitCode;
}

/** What to run after a not-found error, for a human (MCP tools say `next:` the same way); `--json` prints none. */
const NEXT_STEPS: Partial<Record<string, string>> = {
  SANDBOX_NOT_FOUND: "'ramify sandbox list' shows the sandboxes you can reach",
  TEMPLATE_NOT_FOUND: "'ramify template list' shows the templates; 'ramify template build' makes one",
  SNAPSHOT_NOT_FOUND: "'ramify snapshot list' shows the snapshots",
};

/** The request part an API issue path starts with (`body.id`, `query.state`, `params.pid`, `body`). */
const REQUEST_PART = /^(?:body|query|params)(?:\.|$)/;

/**
 * An API error's `message` as a CLI user reads it: each of `details.issues` (`{ path, message }`, the
 * VALIDATION_FAILED layout, contracts/src/issue-messages.ts) the message lists as `<path>: <problem>`
 * loses the request part of its path, which the user never wrote: `body.id: must be a team id ...` reads
 * `id: must be a team id ...`, `body: unknown field 'x' ...` reads `unknown field 'x' ...`. Anything else
 * is kept as it is; `--json` prints the API's message and details unchanged.
 */
export function withoutRequestParts(message: string, details: Record<string, unknown> | undefined): string {
  const issues = details?.issues;
  if (!Array.isArray(issues)) return message;
  let out = message;
  let from = 0;
  for (const issue of issues as unknown[]) {
    const { path, message: problem } = (issue ?? {}) as { path?: unknown; message?: unknown };
    if (typeof path !== 'string' || typeof problem !== 'string' || !REQUEST_PART.test(path)) continue;
    const said = `${path}: ${problem}`;
    const at = out.indexOf(said, from);
    if (at < 0) continue;
    const field = path.replace(REQUEST_PART, '');
    const plain = field === '' ? problem : `${field}: ${problem}`;
    out = out.slice(0, at) + plain + out.slice(at + said.length);
    from = at + plain.length;
  }
  return out;
}
