/** The `ramify` command tree. */
import { createRequire } from 'node:module';
import { Command } from 'commander';
import type { CliEnv, GlobalOptions } from './context.js';
import { loadServeDefinitions, registerServe } from './commands/serve.js';
import { registerSandbox } from './commands/sandbox.js';
import { registerTemplate } from './commands/template.js';
import { registerSnapshot } from './commands/snapshot.js';
import { registerDemo } from './commands/demo.js';
import { registerSshKeys } from './commands/ssh.js';
import { registerTeams } from './commands/team.js';
import { registerKeys } from './commands/key.js';
import { registerNetworks } from './commands/network.js';
import { loadMcpTools, registerMcp } from './commands/mcp.js';
import { registerAudit } from './commands/audit.js';
import { registerEvents } from './commands/events.js';
import { registerWebhooks } from './commands/webhook.js';
import { registerUsage } from './commands/usage.js';

const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

/**
 * Build the program. Commander's own exits are turned into thrown `CommanderError`s (see `runCli`).
 * Command modules load their heavy dependencies (the MCP SDK, the daemon, zod schemas) in their actions;
 * the two definitions that need one while commander parses are loaded by {@link loadDefinitionsFor},
 * which must run before parsing `mcp` or `serve` (`runCli` does).
 */
export function createProgram(env: CliEnv): Command {
  const program = new Command('ramify')
    .description('Ramify: self-hosted sandboxes that pause, resume and fork')
    .version(version, '-V, --version')
    .option('--api-url <url>', 'API URL (env RAMIFY_API_URL, default http://127.0.0.1:7423)')
    .option('--api-key <key>', 'API key (env RAMIFY_API_KEY, else $RAMIFY_HOME/api-key or /var/lib/ramify/api-key)')
    .option('--json', 'machine-readable JSON on stdout; errors as {"error":{code,message}} on stderr')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => env.stdout.write(s),
      writeErr: (s) => env.stderr.write(s),
      // Usage errors: plain text plus a hint, or nothing with --json (`runCli` then prints an error body).
      outputError: (s, write) => {
        if (program.opts<GlobalOptions>().json !== true) write(`${s}(run with --help for usage)\n`);
      },
    })
    .addHelpText('after', `
Exit codes: 0 ok; 1 the API or a local file failed (CODE: message on stderr); 2 usage error;
sandbox exec and shell: the command's or shell's own exit code (see their --help).`);
  registerServe(program, env);
  registerSandbox(program, env);
  registerTemplate(program, env);
  registerSnapshot(program, env);
  registerSshKeys(program, env);
  registerTeams(program, env);
  registerKeys(program, env);
  registerNetworks(program, env);
  registerMcp(program, env);
  registerAudit(program, env);
  registerEvents(program, env);
  registerWebhooks(program, env);
  registerUsage(program, env);
  registerDemo(program, env);
  return program;
}

/**
 * Load what the definitions of the commands named in `args` need before commander parses them: the MCP
 * tool list of `ramify mcp --help` (also `ramify help mcp`, which commander renders synchronously, no
 * hook run) and the `--warm-pool` parser of `ramify serve`. Their modules take hundreds of ms to import,
 * so every other command starts without them. Any argument equal to the command's name counts (it only
 * costs time).
 */
export async function loadDefinitionsFor(args: readonly string[]): Promise<void> {
  await Promise.all([
    args.includes('mcp') ? loadMcpTools() : undefined,
    args.includes('serve') ? loadServeDefinitions() : undefined,
  ]);
}
