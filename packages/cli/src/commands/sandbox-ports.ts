/**
 * `ramify sandbox url|expose|unexpose|ports|auto-pause|auto-resume` and `ramify sandbox ingress log`: a sandbox's port
 * URLs, who may reach them, when it pauses itself, and what the ingress served.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { Sandbox, type IngressLogResponse, type PortsInfo } from '@ramify/sdk';
import { action, type CliEnv } from '../context.js';
import { intIn, parseDuration } from '../parse.js';
import { formatDuration } from '../output/format.js';
import { renderTable } from '../output/table.js';

const portArg = (value: string): number => {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65535) throw new Error(`'${value}' is not a port: a port is an integer from 1 to 65535`);
  return port;
};

const ACCESS_HELP = `A port URL is http://<port>-<sandboxId>.<domain>[:<ingressPort>]/ (default domain 'localhost').
Token access (the default): send header X-Ramify-Access-Token: TOKEN, or open URL?ramify_access_token=TOKEN
once in a browser (it sets a cookie for that host and redirects without it). --public: no token.
A request to a paused sandbox wakes it (autoResume, on while a port is exposed) and is answered once the
server does; past 30 s it gets 503 with Retry-After. With autoResume off a paused sandbox answers 503
SANDBOX_PAUSED. No token: 401; a wrong one: 403; a malformed one: 400; port not exposed: 404.`;

const AUTO_PAUSE_HELP = `The sandbox is paused once, for the whole duration, nothing used it: no API call naming it, no open
stream (exec, attach), no ingress request or open ingress connection (a WebSocket), and its CPU use stayed
under the daemon's threshold (0.1 cores, read from the runtime's cgroup): a busy background job keeps it
running. It is never killed: a pause refused (CHECKPOINT_BLOCKED: open outbound connections) is retried.
With a port exposed, a request to its URL wakes it again.`;

function ingressLogTable(log: IngressLogResponse): string {
  const wakes = `wake-ups: ${log.wakeups}${log.lastWakeAt ? ` (last ${log.lastWakeAt})` : ''}`;
  if (log.entries.length === 0) return `no ingress log entries\n${wakes}`;
  const rows = log.entries.map((e) => [e.at, e.client, e.method, `${e.port} ${e.path}`, String(e.status), String(e.bytes), e.durationMs.toFixed(1), e.woke ? 'woke' : '']);
  return `${renderTable(['AT', 'CLIENT', 'METHOD', 'PORT PATH', 'STATUS', 'BYTES', 'MS', 'WOKE'], rows)}\n${wakes}`;
}

function portsTable(info: PortsInfo): string {
  if (info.ports.length === 0) return 'no ports exposed';
  return `${renderTable(['PORT', 'ACCESS', 'URL'], info.ports.map((p) => [String(p.port), p.access, p.url]))}\nauto-resume: ${info.autoResume ? 'on' : 'off'}`;
}

/** `10m`-style idle time, checked against the daemon's range (10 s to 24 h) so the message speaks in durations; `off` is null. */
function idleDuration(value: string): number | null {
  if (value === 'off') return null;
  const ms = parseDuration(value);
  if (ms < 10_000 || ms > 86_400_000) throw new InvalidArgumentError(`'${value}' is out of range: auto-pause takes 10s to 24h, or 'off'`);
  return ms;
}

function onOff(value: string): boolean {
  if (value !== 'on' && value !== 'off') throw new InvalidArgumentError(`'${value}' is neither 'on' nor 'off'`);
  return value === 'on';
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

  sandbox.command('auto-pause').argument('<id>', 'sandbox id').argument('<duration>', "idle time before it pauses, e.g. 10m (10s to 24h), or 'off'", idleDuration)
    .description('pause the sandbox once idle this long (live), or never (off)').addHelpText('after', `\n${AUTO_PAUSE_HELP}`)
    .action(action(env, async (ctx, id: string, idleMs: number | null) => {
      const autoPause = idleMs === null ? null : { idleMs };
      const info = await Sandbox.fromId(id, ctx.connection).setAutoPause(autoPause);
      ctx.output(info, () => (info.autoPause ? `auto-pause: after ${formatDuration(info.autoPause.idleMs)} idle` : 'auto-pause: off'));
    }));

  sandbox.command('auto-resume').argument('<id>', 'sandbox id').argument('<on|off>', "'on' (the default while a port is exposed) or 'off'", onOff)
    .description('whether a request to a port URL of the paused sandbox wakes it (off: 503 SANDBOX_PAUSED)')
    .action(action(env, async (ctx, id: string, autoResume: boolean) => {
      const info = await Sandbox.fromId(id, ctx.connection).setAutoResume(autoResume);
      ctx.output(info, () => `auto-resume: ${info.autoResume ? 'on' : 'off'}`);
    }));

  const ingress = sandbox.command('ingress').description('what the ingress served for a sandbox');
  ingress.command('log').argument('<id>', 'sandbox id')
    .description('requests to its port URLs, newest first (time, client, method, port and path, status, body bytes, ms, woke), and its wake-up count')
    .option('--limit <n>', 'at most this many entries (1-1000; the daemon keeps the newest 1000)', intIn(1, 1000))
    .action(action(env, async (ctx, id: string, opts: { limit?: number }) => {
      const log = await Sandbox.fromId(id, ctx.connection).getIngressLog({ limit: opts.limit });
      ctx.output(log, () => ingressLogTable(log));
    }));
}
