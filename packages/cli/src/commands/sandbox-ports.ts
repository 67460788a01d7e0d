/** `ramify sandbox url|expose|unexpose|ports`: a sandbox's port URLs and who may reach them. */
import type { Command } from 'commander';
import { Sandbox, type PortsInfo } from '@ramify/sdk';
import { action, type CliEnv } from '../context.js';
import { renderTable } from '../output/table.js';

const portArg = (value: string): number => {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65535) throw new Error(`'${value}' is not a port: a port is an integer from 1 to 65535`);
  return port;
};

const ACCESS_HELP = `A port URL is http://<port>-<sandboxId>.<domain>[:<ingressPort>]/ (default domain 'localhost').
Token access (the default): send header X-Ramify-Access-Token: TOKEN, or open URL?ramify_access_token=TOKEN
once in a browser (it sets a cookie for that host and redirects without it). --public: no token.
A request to a paused sandbox wakes it (autoResume, on while a port is exposed).`;

function portsTable(info: PortsInfo): string {
  if (info.ports.length === 0) return 'no ports exposed';
  return `${renderTable(['PORT', 'ACCESS', 'URL'], info.ports.map((p) => [String(p.port), p.access, p.url]))}\nauto-resume: ${info.autoResume ? 'on' : 'off'}`;
}

/** Register the port commands on `sandbox`. */
export function registerPorts(sandbox: Command, env: CliEnv): void {
  sandbox.command('url').argument('<id>', 'sandbox id').argument('<port>', 'port (1-65535)', portArg)
    .description('print the URL of an exposed port (--json: { url, host, token? })').addHelpText('after', `\n${ACCESS_HELP}`)
    .action(action(env, async (ctx, id: string, port: number) => {
      const info = await Sandbox.fromId(id, ctx.connection).getPortUrl(port);
      ctx.output(info, () => info.url);
      if (info.token && !ctx.json) ctx.note(`ramify: token access; in a browser open ${info.url}?ramify_access_token=${info.token}`);
    }));

  sandbox.command('expose').argument('<id>', 'sandbox id').argument('<port>', 'port (1-65535)', portArg)
    .option('--public', 'anyone reaching the ingress may open it (no token)')
    .description('open a port at its URL (token access unless --public); prints the URL').addHelpText('after', `\n${ACCESS_HELP}`)
    .action(action(env, async (ctx, id: string, port: number, opts: { public?: boolean }) => {
      const info = await Sandbox.fromId(id, ctx.connection).expose(port, { access: opts.public ? 'public' : 'token' });
      ctx.output(info, () => `${info.url} (${info.access})`);
    }));

  sandbox.command('unexpose').argument('<id>', 'sandbox id').argument('<port>', 'port (1-65535)', portArg)
    .description('close a port to the ingress (idempotent)')
    .action(action(env, async (ctx, id: string, port: number) => {
      await Sandbox.fromId(id, ctx.connection).unexpose(port);
      ctx.output({ port, exposed: false }, () => `port ${port} closed`);
    }));

  sandbox.command('ports').argument('<id>', 'sandbox id').description("list a sandbox's exposed ports and their URLs")
    .action(action(env, async (ctx, id: string) => {
      const info = await Sandbox.fromId(id, ctx.connection).getPorts();
      ctx.output(info, () => portsTable(info));
    }));
}
