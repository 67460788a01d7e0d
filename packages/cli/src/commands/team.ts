/**
 * `ramify team create|list|get|quota`: teams and their quotas (docs/design/TEAMS.md). Making a team and
 * setting a quota take an admin key of the `default` team (the first-start key is one).
 */
import { MAX_QUOTA_VALUE } from '@ramify/contracts/client';
import type { SetTeamQuotaRequest } from '@ramify/contracts';
import { createTeam, getTeam, listTeams, setTeamQuota, type TeamInfo } from '@ramify/sdk';
import { InvalidArgumentError, type Command } from 'commander';
import { action, type CliEnv } from '../context.js';
import { noLimit } from '../parse.js';
import { renderFields, renderTable } from '../output/table.js';

export const TEAMS_HELP = `Every sandbox, snapshot, template and SSH key belongs to a team, and every API key to one team:
a key sees and touches only its own team's (another team's sandbox is 'not found'). The 'default'
team holds everything made before teams, and its templates (base, python-tests) are shared with every
team. Admin keys of the default team make teams, set quotas and make keys for any team; other admin
keys make keys for their own team; member keys use sandboxes. See 'ramify key --help'.`;

/**
 * A quota option value: a whole number from 0, or `none` (no limit). `none` stays the string: commander
 * turns a parser's `null` into `''`; {@link quotaOf} maps it to `null`.
 */
const limitArg = (value: string): number | 'none' => {
  if (value === 'none') return 'none';
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > MAX_QUOTA_VALUE) throw new InvalidArgumentError(`expected a whole number from 0 to ${MAX_QUOTA_VALUE}, or 'none'`);
  return n;
};

interface QuotaOptions {
  maxRunning?: number | 'none';
  maxMemoryMb?: number | 'none';
  maxForks?: number | 'none';
}

function quotaOf(opts: QuotaOptions): SetTeamQuotaRequest {
  return {
    ...(opts.maxRunning !== undefined ? { maxRunning: noLimit(opts.maxRunning) } : {}),
    ...(opts.maxMemoryMb !== undefined ? { maxMemoryMB: noLimit(opts.maxMemoryMb) } : {}),
    ...(opts.maxForks !== undefined ? { maxForksPerCall: noLimit(opts.maxForks) } : {}),
  };
}

function withQuotaOptions(cmd: Command): Command {
  return cmd
    .option('--max-running <n>', "sandboxes creating, running, pausing or resuming at once ('none': no limit)", limitArg)
    .option('--max-memory-mb <mib>', "their memoryMB together, MiB ('none': no limit)", limitArg)
    .option('--max-forks <n>', "children of one fork or explore step ('none': no limit)", limitArg);
}

const limit = (n: number | null): string => (n === null ? '-' : String(n));

function teamText(t: TeamInfo): string {
  return renderFields([
    ['id', t.id], ['created', t.createdAt],
    ['running', `${t.usage.running} of ${t.quota.maxRunning ?? 'no limit'}`],
    ['memory', `${t.usage.memoryMB} MiB of ${t.quota.maxMemoryMB === null ? 'no limit' : `${t.quota.maxMemoryMB} MiB`}`],
    ['forks per call', t.quota.maxForksPerCall === null ? 'no limit' : String(t.quota.maxForksPerCall)],
  ]);
}

/** Register `team` on the program. */
export function registerTeams(program: Command, env: CliEnv): void {
  const team = program.command('team').description('teams and their quotas').addHelpText('after', `\n${TEAMS_HELP}`);

  withQuotaOptions(team.command('create').argument('<id>', 'team id: 1-63 of a-z, 0-9 and -'))
    .description('make a team, optionally with limits (an admin key of the default team)')
    .action(action(env, async (ctx, id: string, opts: QuotaOptions) => {
      const quota = quotaOf(opts);
      const made = await createTeam(id, { ...ctx.connection, ...(Object.keys(quota).length > 0 ? { quota } : {}) });
      ctx.output(made, () => teamText(made));
    }));

  team.command('list').alias('ls').description('teams the key sees (the default team\'s admin keys: every team), with quota and usage')
    .action(action(env, async (ctx) => {
      const teams = await listTeams(ctx.connection);
      ctx.output({ teams }, () => renderTable(['ID', 'RUNNING', 'MAX RUNNING', 'MEMORY MIB', 'MAX MEMORY MIB', 'MAX FORKS', 'CREATED'],
        teams.map((t) => [t.id, String(t.usage.running), limit(t.quota.maxRunning), String(t.usage.memoryMB), limit(t.quota.maxMemoryMB), limit(t.quota.maxForksPerCall), t.createdAt])));
    }));

  team.command('get').argument('<id>', 'team id').description('one team, its quota and usage')
    .action(action(env, async (ctx, id: string) => {
      const t = await getTeam(id, ctx.connection);
      ctx.output(t, () => teamText(t));
    }));

  withQuotaOptions(team.command('quota').argument('<id>', 'team id'))
    .description("change a team's limits (an admin key of the default team): only the options given change")
    .addHelpText('after', `
Exceeding a limit at create, fork or resume (auto-resume too) is 429 QUOTA_EXCEEDED naming it, and
nothing is created or started. A lower limit stops nothing already running.
  ramify team quota acme --max-running 10 --max-memory-mb 8192 --max-forks 8
  ramify team quota acme --max-memory-mb none`)
    .action(action(env, async (ctx, id: string, opts: QuotaOptions) => {
      const quota = quotaOf(opts);
      if (Object.keys(quota).length === 0) throw new InvalidArgumentError('give at least one of --max-running, --max-memory-mb, --max-forks');
      const t = await setTeamQuota(id, quota, ctx.connection);
      ctx.output(t, () => teamText(t));
    }));
}
