/**
 * `ramify audit [--sandbox ID] [--limit N] [--before ID] [--anonymous]`: the daemon's audit log, newest
 * first (every state-changing API call, and every call an MCP tool made, with the key, the tool and the
 * outcome). Ids are numbered per team (docs/design/TEAMS.md, "Audit ids"); `--before` pages backwards.
 */
import { listAudit, type AuditEntry } from '@ramify/sdk';
import type { Command } from 'commander';
import { action, type CliEnv } from '../context.js';
import { intIn } from '../parse.js';
import { renderTable } from '../output/table.js';

const DEFAULT_LIMIT = 100;

function auditTable(entries: AuditEntry[]): string {
  if (entries.length === 0) return 'no audit entries';
  return renderTable(['ID', 'AT', 'KEY', 'TOOL', 'ACTION', 'SANDBOX', 'STATUS', 'ERROR'],
    entries.map((e) => [String(e.id), e.at, e.apiKeyId ?? '-', e.tool ?? '-', e.action, e.sandboxId ?? '-', String(e.status), e.errorCode ?? '-']));
}

/** Register `audit` on the program. */
export function registerAudit(program: Command, env: CliEnv): void {
  program.command('audit')
    .description('the audit log, newest first: who (API key, MCP tool) did what to which sandbox, and the outcome')
    .option('--sandbox <id>', 'only the entries of this sandbox')
    .option('--limit <n>', `at most this many entries (1-1000, default ${DEFAULT_LIMIT})`, intIn(1, 1000))
    .option('--before <id>', 'only entries older than this id (the next page: the last ID of the previous one)', intIn(1, Number.MAX_SAFE_INTEGER))
    .option('--anonymous', "the calls that carried no valid key instead of the team's (the default team's admin keys only)")
    .addHelpText('after', `
IDs count the team's own audited calls (1, 2, 3, ...): other teams' calls never show in them. When a
page is full, a note on stderr gives the --before for the next one (with --json too).`)
    .action(action(env, async (ctx, opts: { sandbox?: string; limit?: number; before?: number; anonymous?: boolean }) => {
      const limit = opts.limit ?? DEFAULT_LIMIT;
      const entries = await listAudit({
        ...ctx.connection, limit,
        ...(opts.sandbox !== undefined ? { sandboxId: opts.sandbox } : {}),
        ...(opts.before !== undefined ? { before: opts.before } : {}),
        ...(opts.anonymous ? { anonymous: true } : {}),
      });
      ctx.output({ entries }, () => auditTable(entries));
      const last = entries.at(-1);
      if (entries.length === limit && last && last.id > 1) ctx.note(`older entries may follow: next page with --before ${last.id} (same filters)`);
    }));
}
