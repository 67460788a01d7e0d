/** `ramify serve`: run the daemon in this process until SIGINT/SIGTERM. */
import { Option, type Command } from 'commander';
import { RamifyError } from '@ramify/sdk';
import { action, type CliEnv } from '../context.js';
import { intIn } from '../parse.js';

/** The part of `@ramify/daemon` this command uses (imported dynamically so the CLI builds without it). */
interface DaemonModule {
  serve(options: { host?: string; port?: number; dataDir?: string; logLevel?: string }): Promise<{ url: string; dataDir: string; close(): Promise<void> }>;
}

async function loadDaemon(): Promise<DaemonModule> {
  const specifier = '@ramify/daemon';
  try {
    return (await import(specifier)) as DaemonModule;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new RamifyError('RUNTIME_UNAVAILABLE', `the daemon package ${specifier} is not installed or not built (${err instanceof Error ? err.message : String(err)})`);
    }
    throw err;
  }
}

/** Register `serve` on `program`. */
export function registerServe(program: Command, env: CliEnv): void {
  program.command('serve').description('run the Ramify daemon (API, runtimes, networking) until interrupted')
    .option('--host <host>', 'address to listen on (default 127.0.0.1: loopback only)')
    .option('--port <port>', 'port to listen on (default 7423; 0 picks a free one)', intIn(0, 65535))
    .option('--data-dir <dir>', 'data directory (default $RAMIFY_HOME, else /var/lib/ramify)')
    .addOption(new Option('--log-level <level>', 'daemon log level (JSON log on stderr)').choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']))
    .action(action(env, async (ctx, opts: { host?: string; port?: number; dataDir?: string; logLevel?: string }) => {
      const { serve } = await loadDaemon();
      const server = await serve({ host: opts.host, port: opts.port, dataDir: opts.dataDir, logLevel: opts.logLevel });
      ctx.note(`ramify: serving ${server.url} (data ${server.dataDir}); Ctrl-C stops the daemon (sandboxes keep running)`);
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          resolve();
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
      await server.close();
    }));
}
