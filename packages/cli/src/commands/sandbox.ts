/** `ramify sandbox ...`: lifecycle commands. `exec` and `files` live in their own modules. */
import { Command, Option } from 'commander';
import { Sandbox, type NetworkJoinRequest, type SandboxInfo, type SandboxState } from '@ramify/sdk';
import type { RuntimeName } from '@ramify/contracts';
import { action, type CliContext, type CliEnv } from '../context.js';
import { intIn, keyValue, oneOf, parseDuration } from '../parse.js';
import { renderFields, renderTable } from '../output/table.js';
import { formatDuration, formatRelative } from '../output/format.js';
import { plainIds, templateLabels, type TemplateLabel } from '../output/template-labels.js';
import { registerExec } from './sandbox-exec.js';
import { registerProcesses } from './sandbox-processes.js';
import { registerShell } from './sandbox-shell.js';
import { registerFiles } from './sandbox-files.js';
import { registerSync } from './sandbox-sync.js';
import { DENY_ALL, collectRule, registerEgress } from './sandbox-egress.js';
import { registerPorts } from './sandbox-ports.js';
import { registerSshAccess } from './ssh.js';
import { collectNetwork, registerSandboxNetworks } from './network.js';
import { registerTimeline } from './events.js';
import { budgetOf, registerSandboxUsage, withBudgetOptions } from './sandbox-usage.js';

/** Default and largest `list --limit` (the API's page size default and maximum). */
const DEFAULT_LIST_LIMIT = 100;
const MAX_LIST_LIMIT = 1000;

const STATES: readonly SandboxState[] = ['creating', 'running', 'pausing', 'paused', 'resuming', 'killing', 'killed', 'error'];


/** Comma-separated states (`--state running,paused`). */
function parseStates(value: string): SandboxState[] {
  return value.split(',').map((s) => oneOf(STATES)(s.trim()));
}

function sandboxFields(info: SandboxInfo, template: TemplateLabel): string {
  const meta = Object.entries(info.metadata).map(([k, v]) => `${k}=${v}`).join(' ');
  return renderFields([
    ['id', info.id], ['state', info.error ? `${info.state} (${info.error})` : info.state], ['runtime', info.runtime],
    ['template', template(info.templateId)], ['parent', info.parentId ?? '-'], ['snapshot', info.sourceSnapshotId ?? '-'],
    ['cpus', String(info.cpuCount)], ['memory', `${info.memoryMB} MB`], ['disk', info.diskSizeMB === null ? '- (file changes count against memory)' : `${info.diskSizeMB} MB`],
    ['metadata', meta || '-'],
    ['created', `${info.createdAt} (${formatRelative(info.createdAt)})`],
    ['timeout', `${formatDuration(info.timeoutMs)}, then ${info.onTimeout}`], ['ends', info.endAt ? `${info.endAt} (${formatRelative(info.endAt)})` : '- (clock stopped)'],
    ['auto-pause', info.autoPause ? `after ${formatDuration(info.autoPause.idleMs)} idle` : 'off'],
  ]);
}

function sandboxTable(infos: SandboxInfo[], template: TemplateLabel): string {
  if (infos.length === 0) return 'no sandboxes';
  return renderTable(['ID', 'STATE', 'RUNTIME', 'TEMPLATE', 'PARENT', 'CREATED', 'ENDS'], infos.map((i) => [
    i.id, i.state, i.runtime, template(i.templateId), i.parentId ?? '-', formatRelative(i.createdAt), formatRelative(i.endAt),
  ]));
}

/** Register `sandbox` and its subcommands on `program`. */
export function registerSandbox(program: Command, env: CliEnv): void {
  const sandbox = program.command('sandbox').alias('sbx').description('create, inspect and control sandboxes');

  withBudgetOptions(sandbox.command('create'), 'budget-').description('create a sandbox and print its id (--json: its info)')
    .option('-t, --template <name>', 'template name or id (default: base)')
    .option('-s, --snapshot <name>', 'start from a snapshot (id or name) instead of a template')
    .option('--timeout <duration>', 'lifetime, e.g. 300000 (ms), 30s, 10m, 2h (server default 5m)', parseDuration)
    .addOption(new Option('--on-timeout <action>', 'what the deadline does').choices(['pause', 'kill']))
    .option('-e, --env <KEY=VALUE>', "environment variable for every command, over the template's envs (repeatable)", keyValue)
    .option('-m, --metadata <KEY=VALUE>', 'metadata label (repeatable)', keyValue)
    .option('--cpu <count>', 'vCPUs (1-16)', intIn(1, 16))
    .option('--memory <MB>', 'memory in MB (128-65536)', intIn(128, 65536))
    .option('--disk <MB>', 'root disk size in MB (microvm only): at least the image\'s (2048 for templates, more for a grown snapshot), at most 262144', intIn(1, 262_144))
    .addOption(new Option('--runtime <name>', 'runtime: gvisor (default) or microvm (a QEMU virtual machine with its own kernel)').choices(['gvisor', 'microvm']))
    .option('--egress <RULE>', "egress allow rule (repeatable; default open egress, or a snapshot's policy); see 'ramify sandbox egress --help'", collectRule)
    .addOption(new Option('--deny-all', 'deny all egress: nothing leaves (no name resolves, no address is reachable)').conflicts('egress'))
    .option('-p, --port <PORT>', "expose a port at its URL (token access; repeatable); see 'ramify sandbox url --help'", (v: string, prev: number[] = []) => [...prev, Number(v)])
    .option('--public-port <PORT>', 'expose a port with public access (no token; repeatable)', (v: string, prev: number[] = []) => [...prev, Number(v)])
    .option('--auto-pause <duration>', "pause once idle this long, e.g. 10m (10s to 24h), or 'off'; see 'ramify sandbox auto-pause --help'", (v: string) => (v === 'off' ? 'off' : parseDuration(v)))
    .option('--network <NAME[:ALIAS]>', "join a private network, as <alias>.<network>.internal (repeatable); see 'ramify network --help'", collectNetwork)
    .addHelpText('after', `
From a snapshot (--snapshot) the sandbox starts with the egress policy, the ports and the auto-pause the
snapshot recorded (see 'ramify snapshot get'); --egress or --deny-all, --port and --auto-pause replace them.
It joins no private network the snapshot recorded: --network says which.
--budget-* set a budget for it and everything forked from it; see 'ramify sandbox budget --help'.`)
    .action(action(env, async (ctx, opts: { template?: string; snapshot?: string; timeout?: number; onTimeout?: 'pause' | 'kill';
      env?: Record<string, string>; metadata?: Record<string, string>; cpu?: number; memory?: number; disk?: number; runtime?: RuntimeName; egress?: string[]; denyAll?: boolean; port?: number[]; publicPort?: number[];
      autoPause?: number | 'off'; network?: NetworkJoinRequest[]; budgetCpuSeconds?: number | 'none'; budgetSandboxSeconds?: number | 'none'; budgetMaxSandboxes?: number | 'none' }) => {
      const budget = budgetOf({ cpuSeconds: opts.budgetCpuSeconds, sandboxSeconds: opts.budgetSandboxSeconds, maxSandboxes: opts.budgetMaxSandboxes });
      const ports = [...(opts.port ?? []).map((port) => ({ port, access: 'token' as const })), ...(opts.publicPort ?? []).map((port) => ({ port, access: 'public' as const }))];
      const sbx = await ctx.spin('creating sandbox', () => Sandbox.create({
        ...ctx.connection, template: opts.template, snapshot: opts.snapshot, timeoutMs: opts.timeout, onTimeout: opts.onTimeout,
        envs: opts.env, metadata: opts.metadata, cpuCount: opts.cpu, memoryMB: opts.memory, diskSizeMB: opts.disk, runtime: opts.runtime,
        egress: opts.denyAll ? DENY_ALL : opts.egress, ...(ports.length > 0 ? { ports } : {}),
        ...(opts.autoPause !== undefined ? { autoPause: opts.autoPause === 'off' ? null : { idleMs: opts.autoPause } } : {}),
        ...(opts.network ? { networks: opts.network } : {}),
        ...(Object.keys(budget).length > 0 ? { budget } : {}),
      }));
      if (ctx.json) ctx.output(await sbx.getInfo(), () => '');
      else ctx.print(sbx.sandboxId);
    }));

  sandbox.command('list').alias('ls').description('list sandboxes, oldest first (default: all but killed, at most 100)')
    .addOption(new Option('--state <states>', `comma-separated states (${STATES.join(', ')})`).argParser(parseStates).conflicts('all'))
    .option('-a, --all', 'every state, killed sandboxes included')
    .option('-m, --metadata <KEY=VALUE>', 'only sandboxes with this label (repeatable)', keyValue)
    .option('--limit <n>', `at most this many, 1-${MAX_LIST_LIMIT}`, intIn(1, MAX_LIST_LIMIT), DEFAULT_LIST_LIMIT)
    .option('--next-token <token>', 'continue after the previous page (the token the previous list printed)')
    .addHelpText('after', `
One request, one page of at most --limit sandboxes. When more match, a note on stderr gives the
--next-token for the next page, with --json too (stdout stays the page as a JSON array):
  ramify sandbox list --json 2>&1 >/dev/null | grep -o -- '--next-token [^ ]*'
TEMPLATE is the template's name; 'tpl_... (deleted)': that template has since been deleted.`)
    .action(action(env, async (ctx, opts: { state?: SandboxState[]; all?: boolean; metadata?: Record<string, string>; limit: number; nextToken?: string }) => {
      const states = opts.all ? [...STATES] : opts.state;
      const pager = Sandbox.list({ ...ctx.connection, state: states, metadata: opts.metadata, limit: opts.limit, nextToken: opts.nextToken });
      const [infos, template] = await ctx.spin('listing sandboxes', () => Promise.all([
        pager.nextItems(),
        ctx.json ? plainIds : templateLabels(ctx),
      ]));
      ctx.output(infos, () => sandboxTable(infos, template));
      if (pager.nextToken) {
        ctx.note(`more sandboxes match: next page with --next-token ${pager.nextToken} (same filters), or narrow with --state/--metadata`);
      }
    }));

  sandbox.command('get').alias('info').argument('<id>', 'sandbox id').description("show a sandbox's info")
    .action(action(env, async (ctx, id: string) => {
      const [info, template] = await Promise.all([Sandbox.getInfo(id, ctx.connection), ctx.json ? plainIds : templateLabels(ctx)]);
      ctx.output(info, () => sandboxFields(info, template));
    }));

  registerExec(sandbox, env);
  registerProcesses(sandbox, env);
  registerShell(sandbox, env);

  sandbox.command('pause').argument('<id>', 'sandbox id').description('checkpoint memory, processes and files; the timeout stops (resume starts a fresh timeout)')
    .action(action(env, async (ctx, id: string) => {
      const info = await ctx.spin(`pausing ${id}`, () => Sandbox.pause(id, ctx.connection));
      ctx.output(info, () => `${info.id} ${info.state}`);
    }));

  sandbox.command('resume').argument('<id>', 'sandbox id').description('restore a paused sandbox; its lifetime starts afresh')
    .option('--timeout <duration>', "new lifetime from now (e.g. 10m); default: the sandbox's own timeout", parseDuration)
    .action(action(env, async (ctx, id: string, opts: { timeout?: number }) => {
      const info = await ctx.spin(`resuming ${id}`, () => Sandbox.resume(id, { ...ctx.connection, timeoutMs: opts.timeout }));
      ctx.output(info, () => `${info.id} ${info.state}`);
    }));

  sandbox.command('fork').argument('<id>', 'sandbox id').description('fork into N new sandboxes (memory, processes, files); prints their ids')
    .option('-n, --count <n>', 'how many forks (1-64)', intIn(1, 64), 1)
    .option('--no-networks', "the forks join none of the parent's private networks (default: each joins them as <parent alias>-<n>)")
    .action(action(env, async (ctx, id: string, opts: { count: number; networks: boolean }) => {
      const forks = await ctx.spin(`forking ${id} x${opts.count}`, () => Sandbox.fromId(id, ctx.connection).fork({ count: opts.count, ...(opts.networks ? {} : { networks: false }) }));
      if (ctx.json) ctx.output(await Promise.all(forks.map((f) => f.getInfo())), () => '');
      else ctx.print(forks.map((f) => f.sandboxId).join('\n'));
    }));

  sandbox.command('snapshot').argument('<id>', 'sandbox id').usage('--name <name> [options] <id>')
    .description('take a named snapshot that outlives the sandbox; prints its id')
    .requiredOption('--name <name>', 'snapshot name (required): 1-128 of [a-zA-Z0-9._-] starting with a letter or digit, unique among snapshots')
    .action(action(env, async (ctx, id: string, opts: { name: string }) => {
      const snap = await ctx.spin(`snapshotting ${id}`, () => Sandbox.fromId(id, ctx.connection).snapshot({ name: opts.name }));
      ctx.output(snap, () => snap.id);
    }));

  sandbox.command('timeout').argument('<id>', 'sandbox id').argument('<duration>', 'new lifetime from now, e.g. 600000, 10m, 1h', parseDuration)
    .description('set the remaining lifetime')
    .action(action(env, async (ctx, id: string, timeoutMs: number) => {
      const info = await Sandbox.setTimeout(id, timeoutMs, ctx.connection);
      ctx.output(info, () => `${info.id} ends ${formatRelative(info.endAt)}`);
    }));

  sandbox.command('kill').alias('rm').argument('<ids...>', 'sandbox ids').description('kill sandboxes (idempotent on killed ones)')
    .action(action(env, async (ctx, ids: string[]) => {
      await ctx.spin(`killing ${ids.length} sandbox(es)`, () => Promise.all(ids.map((id) => Sandbox.fromId(id, ctx.connection).kill())));
      ctx.output({ killed: ids }, () => ids.map((id) => `${id} killed`).join('\n'));
    }));

  registerFiles(sandbox, env);
  registerSync(sandbox, env);
  registerEgress(sandbox, env);
  registerPorts(sandbox, env);
  registerSshAccess(sandbox, env);
  registerSandboxNetworks(sandbox, env);
  registerTimeline(sandbox, env);
  registerSandboxUsage(sandbox, env);
}
