/** `ramify demo ...`: showcase scenarios. Each demo's module is imported only when it runs. */
import type { RuntimeName } from '@ramify/contracts';
import { Option, type Command } from 'commander';
import { action, type CliEnv } from '../context.js';
import { intIn } from '../parse.js';

/** Register `demo` and its subcommands on `program`. */
export function registerDemo(program: Command, env: CliEnv): void {
  const demo = program.command('demo').description('showcase scenarios');

  demo.command('best-of-n').description('fork one sandbox N ways, try a strategy in each, keep the best (Sandbox.explore)')
    .option('-t, --template <name>', 'template to start from (default: python-tests, CPython with its own test suite)')
    .option('-n, --count <n>', 'number of forks, one candidate fix each (default 3, max 4)', intIn(1, 4))
    .addOption(new Option('-r, --runtime <name>', 'runtime of the sandboxes: gvisor (default) or microvm').choices(['gvisor', 'microvm']))
    .action(action(env, async (ctx, opts: { template?: string; count?: number; runtime?: RuntimeName }) => {
      const { runBestOfN } = await import('../demo/best-of-n.js');
      await runBestOfN({ connection: ctx.connection, json: ctx.json, template: opts.template, count: opts.count, runtime: opts.runtime, print: (line) => ctx.print(line) });
    }));
}
