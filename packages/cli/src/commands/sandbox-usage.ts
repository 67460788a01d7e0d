/**
 * `ramify sandbox metrics|tree|budget`: a sandbox's live metrics (`--follow` polls), its fork tree with
 * each sandbox's state and usage, and the budget of its tree (docs/design/USAGE.md).
 */
import { MAX_BUDGET_VALUE } from '@ramify/contracts/client';
import type { Budget, BudgetInfo, SandboxTreeNode } from '@ramify/contracts';
import { Sandbox, SandboxNotFoundError, type SandboxMetrics } from '@ramify/sdk';
import { InvalidArgumentError, type Command } from 'commander';
import { action, type CliContext, type CliEnv } from '../context.js';
import { noLimit, parseDuration } from '../parse.js';
import { renderFields } from '../output/table.js';
import { formatDuration } from '../output/format.js';
import { timeOption } from './usage.js';

/** How often `metrics --follow` asks for new samples, ms. */
const FOLLOW_POLL_MS = 5_000;

const mib = (bytes: number): string => String(Math.round(bytes / 1024 / 1024));

/** One sample as E2B's CLI prints it (`1 Cores` too: scripts parse E2B's format). */
function metricLine(m: SandboxMetrics): string {
  const time = m.timestamp.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
  const disk = m.diskUsed === null || m.diskTotal === null ? 'Disk: - (in memory)' : `Disk: ${mib(m.diskUsed).padStart(5)} / ${mib(m.diskTotal)} MiB`;
  return `[${time}]  CPU: ${m.cpuUsedPct.toFixed(2).padStart(6)}% / ${String(m.cpuCount).padStart(2)} Cores | Memory: ${mib(m.memUsed).padStart(5)} / ${mib(m.memTotal)} MiB | ${disk}`;
}

/** A budget limit option: a number above 0 (`what` says which kind), or `none` (no limit: see `noLimit`). */
function limitArg(what: string, parse: (v: string) => number): (value: string) => number | 'none' {
  return (value) => {
    if (value === 'none') return 'none';
    const n = parse(value);
    if (!(n > 0) || n > MAX_BUDGET_VALUE) throw new InvalidArgumentError(`expected ${what} above 0 (at most ${MAX_BUDGET_VALUE}), or 'none'`);
    return n;
  };
}
const seconds = limitArg('a number', (v) => (/^\d+(\.\d+)?$/.test(v) ? Number(v) : Number.NaN));
/** Seconds: a plain number is seconds, else a duration (90m, 2h). */
const duration = limitArg('seconds or a duration (90m, 2h)', (v) => (/^\d+(\.\d+)?$/.test(v) ? Number(v) : parseDuration(v) / 1000));
const count = limitArg('a whole number', (v) => (/^\d+$/.test(v) ? Number(v) : Number.NaN));

/** Budget options shared by `sandbox budget` and `sandbox create` (`prefix`: `budget-` on create). */
export function withBudgetOptions(cmd: Command, prefix = ''): Command {
  return cmd
    .option(`--${prefix}cpu-seconds <n>`, "CPU-seconds of the tree together ('none': no limit)", seconds)
    .option(`--${prefix}sandbox-seconds <duration>`, "time its sandboxes run, summed: seconds (3600) or a duration (90m, 2h) ('none': no limit)", duration)
    .option(`--${prefix}max-sandboxes <n>`, "sandboxes of the tree alive at once ('none': no limit)", count);
}

/** The budget of parsed options (only those given). */
export function budgetOf(opts: { cpuSeconds?: number | 'none'; sandboxSeconds?: number | 'none'; maxSandboxes?: number | 'none' }): Budget {
  return {
    ...(opts.cpuSeconds !== undefined ? { cpuSeconds: noLimit(opts.cpuSeconds) } : {}),
    ...(opts.sandboxSeconds !== undefined ? { sandboxSeconds: noLimit(opts.sandboxSeconds) } : {}),
    ...(opts.maxSandboxes !== undefined ? { maxSandboxes: noLimit(opts.maxSandboxes) } : {}),
  };
}

function budgetText(b: BudgetInfo): string {
  const lim = (n: number | null, unit = ''): string => (n === null ? 'no limit' : `${n}${unit}`);
  return renderFields([
    ['budget of', b.sandboxId], ['since', b.since],
    ['cpu', `${b.used.cpuSeconds} of ${lim(b.limits.cpuSeconds, ' CPU-seconds')}`],
    ['running', `${b.used.sandboxSeconds} of ${lim(b.limits.sandboxSeconds, ' sandbox-seconds')}`],
    ['sandboxes', `${b.used.sandboxes} alive of ${lim(b.limits.maxSandboxes)}`],
    ['exceeded', b.exceeded ?? 'no'],
  ]);
}

/** The tree as indented lines: id, state, CPU and running time, budget. */
function treeLines(node: SandboxTreeNode, prefix = '', last = true, root = true): string[] {
  const budget = node.budget ? `  budget ${node.budget.exceeded ? `EXCEEDED (${node.budget.exceeded})` : 'ok'}` : '';
  const line = `${root ? '' : `${prefix}${last ? '└─ ' : '├─ '}`}${node.sandboxId}  ${node.state}  cpu ${node.usage.cpuSeconds.toFixed(1)}s  running ${formatDuration(node.usage.runningSeconds * 1000)}  paused ${formatDuration(node.usage.pausedSeconds * 1000)}${budget}`;
  const childPrefix = root ? '' : `${prefix}${last ? '   ' : '│  '}`;
  return [line, ...node.children.flatMap((c, i) => treeLines(c, childPrefix, i === node.children.length - 1, false))];
}

async function followMetrics(ctx: CliContext, id: string, since: string | undefined): Promise<void> {
  let last = since === undefined ? 0 : Number(since) || Date.parse(since);
  for (;;) {
    let samples: SandboxMetrics[];
    try {
      samples = await Sandbox.getMetrics(id, { ...ctx.connection, start: last + 1 });
    } catch (err) {
      if (err instanceof SandboxNotFoundError) return ctx.note(`${id} is gone (killed)`);
      throw err;
    }
    for (const m of samples) ctx.print(ctx.json ? JSON.stringify(m) : metricLine(m));
    last = samples.at(-1)?.timestamp.getTime() ?? last;
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_POLL_MS));
  }
}

/** Register `metrics`, `tree` and `budget` on `sandbox`. */
export function registerSandboxUsage(sandbox: Command, env: CliEnv): void {
  sandbox.command('metrics').argument('<id>', 'sandbox id').description("a sandbox's samples (every 5 s while running, the last hour): CPU %, memory, disk")
    .option('-f, --follow', 'keep printing new samples as they come (Ctrl-C stops; --json: one JSON object per line)')
    .option('--start <time>', 'first sample: an ISO time, ms since the epoch, or a duration ago (10m)', timeOption)
    .option('--end <time>', 'last sample, as --start', timeOption)
    .addHelpText('after', `
The daemon keeps samples in memory for an hour: a daemon restart starts them afresh. gVisor sandboxes
keep file changes in memory (no disk of their own): their disk shows '-'.`)
    .action(action(env, async (ctx, id: string, opts: { follow?: boolean; start?: string; end?: string }) => {
      if (opts.follow) return followMetrics(ctx, id, opts.start);
      const samples = await Sandbox.getMetrics(id, { ...ctx.connection, start: opts.start, end: opts.end });
      ctx.output(samples, () => (samples.length === 0 ? `no samples of ${id} yet (one every 5 s while it runs)` : samples.map(metricLine).join('\n')));
    }));

  sandbox.command('tree').argument('<id>', 'any sandbox of the tree').description('the fork tree a sandbox is in, from its root: each sandbox with its state, usage and budget')
    .action(action(env, async (ctx, id: string) => {
      const tree = await Sandbox.fromId(id, ctx.connection).getTree();
      ctx.output(tree, () => treeLines(tree.root).join('\n'));
    }));

  withBudgetOptions(sandbox.command('budget').argument('<id>', 'sandbox id'))
    .description('show, set or raise the budget of a sandbox and everything forked from it')
    .option('--remove', 'remove the budget set on this sandbox')
    .addHelpText('after', `
Without options: the budgets covering the sandbox (its own, then its ancestors'), with what their trees
used. With options: set them (a new budget counts from now; the others stay). Over the CPU-seconds or
sandbox-seconds the whole tree is paused (never killed) and forks and resumes in it are refused (429
BUDGET_EXCEEDED) until the budget is raised; a fork past --max-sandboxes is refused.
  ramify sandbox budget sbx_... --cpu-seconds 600 --max-sandboxes 20
  ramify sandbox budget sbx_... --cpu-seconds 1200 && ramify sandbox resume sbx_...`)
    .action(action(env, async (ctx, id: string, opts: { cpuSeconds?: number | 'none'; sandboxSeconds?: number | 'none'; maxSandboxes?: number | 'none'; remove?: boolean }) => {
      const sbx = Sandbox.fromId(id, ctx.connection);
      const budget = budgetOf(opts);
      if (opts.remove) {
        if (Object.keys(budget).length > 0) throw new InvalidArgumentError('--remove takes no limits');
        await sbx.removeBudget();
        return ctx.output({ removed: id }, () => `${id}: budget removed`);
      }
      if (Object.keys(budget).length > 0) {
        const info = await sbx.setBudget(budget);
        return ctx.output(info, () => budgetText(info));
      }
      const budgets = await sbx.getBudgets();
      ctx.output({ budgets }, () => (budgets.length === 0 ? `${id}: no budget covers it` : budgets.map(budgetText).join('\n\n')));
    }));
}
