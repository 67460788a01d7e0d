/**
 * `ramify usage`: the key's team's metered usage (docs/design/USAGE.md) as a table, `--json` or `--csv`.
 */
import { getUsage, type UsageGroupBy, type UsageResponse, type UsageRow } from '@ramify/sdk';
import { Option, type Command } from 'commander';
import { action, type CliEnv } from '../context.js';
import { parseDuration } from '../parse.js';
import { renderTable } from '../output/table.js';
import { formatBytes, formatDuration } from '../output/format.js';

const GROUPS: readonly UsageGroupBy[] = ['sandbox', 'tree', 'template', 'team', 'day'];

/** The figures' columns, in order (the CSV's and JSON's names). */
const FIELDS = ['runningSeconds', 'pausedSeconds', 'cpuSeconds', 'memoryMiBSeconds', 'memoryPeakBytes', 'diskByteSeconds', 'netInBytes', 'netOutBytes'] as const;

/**
 * A `--from`/`--to` value: a duration with a unit (`24h`, `7d`: that long ago) becomes ms since the epoch;
 * anything else (an ISO time, ms since the epoch) goes to the API as given, which checks it.
 */
export function timeOption(value: string): string {
  return /^\d+(\.\d+)?(s|m|h|d)$/.test(value.trim()) ? String(Date.now() - parseDuration(value)) : value;
}

function usageTable(res: UsageResponse): string {
  if (res.rows.length === 0) return `no usage from ${res.from} to ${res.to}`;
  const gib = (mibSeconds: number): string => `${(mibSeconds / 1024 / 3600).toFixed(2)} GiB·h`;
  const rows = res.rows.map((r: UsageRow) => [
    r.key, String(r.sandboxes), formatDuration(r.runningSeconds * 1000), formatDuration(r.pausedSeconds * 1000), r.cpuSeconds.toFixed(1),
    gib(r.memoryMiBSeconds), formatBytes(r.memoryPeakBytes), `${(r.diskByteSeconds / 2 ** 30 / 3600).toFixed(2)} GiB·h`, formatBytes(r.netInBytes), formatBytes(r.netOutBytes),
  ]);
  const head = [res.groupBy.toUpperCase(), 'SANDBOXES', 'RUNNING', 'PAUSED', 'CPU-S', 'MEMORY', 'PEAK MEM', 'DISK (PAUSED)', 'IN', 'OUT'];
  return `${renderTable(head, rows)}\n(${res.from} to ${res.to}, team ${res.team})`;
}

/** Register `usage` on the program. */
export function registerUsage(program: Command, env: CliEnv): void {
  program.command('usage').description("the key's team's metered usage: time running and paused, CPU-seconds, memory, disk, bytes in and out")
    .option('--from <time>', 'window start: an ISO time (2025-07-01), ms since the epoch, or a duration ago (24h, 7d); default 30 days ago', timeOption)
    .option('--to <time>', 'window end (exclusive), as --from; default now', timeOption)
    .addOption(new Option('--group-by <group>', 'rows per sandbox, tree (fork tree root), template, team or day (UTC)').choices(GROUPS).default('sandbox'))
    .option('--sandbox <id>', 'only this sandbox')
    .option('--csv', 'CSV on stdout (a header line, then one line per row; figures in seconds and bytes)')
    .addHelpText('after', `
Figures: RUNNING is time holding CPU and memory (creating, running, pausing, resuming), PAUSED time
paused; CPU-S CPU-seconds from the sandbox's cgroup (gVisor) or QEMU process (microVM); MEMORY the
memory allocated times running time; PEAK MEM the most in use; DISK the pause image's size times paused
time; IN/OUT bytes through the sandbox's network card. Windows are whole UTC hours; live sandboxes count
up to now. The daemon writes counters every 5 s: a restart neither drops nor double counts them.
  ramify usage --from 7d --group-by tree
  ramify usage --group-by day --csv > usage.csv`)
    .action(action(env, async (ctx, opts: { from?: string; to?: string; groupBy: UsageGroupBy; sandbox?: string; csv?: boolean }) => {
      const res = await ctx.spin('reading usage', () => getUsage({ ...ctx.connection, from: opts.from, to: opts.to, groupBy: opts.groupBy, sandboxId: opts.sandbox }));
      if (opts.csv && !ctx.json) {
        const { stringify } = await import('csv-stringify/sync');
        ctx.env.stdout.write(stringify(res.rows.map((r) => [r.key, r.sandboxes, ...FIELDS.map((f) => r[f])]), { header: true, columns: [res.groupBy, 'sandboxes', ...FIELDS] }));
        return;
      }
      ctx.output(res, () => usageTable(res));
    }));
}
