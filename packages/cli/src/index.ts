/**
 * `@ramify/cli`: the `ramify` command. `runCli(argv)` runs it and resolves with the exit code;
 * `createProgram(env)` builds the commander tree (for embedding or docs).
 */
import { createProgram, loadDefinitionsFor } from './program.js';
import { reportError, type CliEnv, type GlobalOptions } from './context.js';

export { createProgram, loadDefinitionsFor } from './program.js';
export { CliContext, EXIT_FAILURE, EXIT_USAGE, type CliEnv, type GlobalOptions } from './context.js';
export { EXIT_EXEC_FAILURE, EXIT_EXEC_TIMEOUT } from './commands/sandbox-exec.js';
export { loadTemplateSpec } from './template-spec.js';

/** Run `ramify` with `argv` (as `process.argv`: node, script, args...). Resolves with the exit code. */
export async function runCli(argv: string[], env: Omit<CliEnv, 'exitCode'> = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin }): Promise<number> {
  const cliEnv: CliEnv = { ...env, exitCode: 0 };
  const program = createProgram(cliEnv);
  try {
    await loadDefinitionsFor(argv.slice(2));
    await program.parseAsync(argv);
    return cliEnv.exitCode;
  } catch (err) {
    // Commander has parsed the global options before any action or usage error: `--json` after `--` is not ours.
    return reportError(err, cliEnv, program.opts<GlobalOptions>().json === true);
  }
}
