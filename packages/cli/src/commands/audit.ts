/**
 * `ramify audit [--sandbox ID] [--limit N]`: the daemon's audit log, newest first (every state-changing
 * API call, and every call an MCP tool made, with the key, the tool and the outcome).
 */
import { listAudit, type AuditEntry } from '@ramify/sdk';
import type { Command } from 'commander';
import { action, type CliEnv } from '../context.js';
import { intIn } from '../parse.js';
import { renderTable } from '../output/table.js';

function auditTable(entries: AuditEntry[]): string {
  if (entries.length === 0) return 'no audit entries';
  return renderTable(['AT', 'KEY', 'TOOL', 'ACTION', 'SANDBOX', 'STATUS', 'ERROR'],
    entries.map((e) => [e.at, e.apiKeyId ?? '-', e.tool ?? '-', e.action, e.sandboxId ?? '-', String(e.status), e.errorCode ?? '-']));
}

/** Register `audit` on the program. */
export function registerAudit(program: Command, env: CliEnv): void {
  program.command('audit')
    .description('the audit log, newest first: who (API key, MCP tool) did what to which sandbox, and the outcome')
    .option('--sandbox <id>', 'only the entries of this sandbox')
    .option('--limit <n>', 'at most this many entries (1-1000, default 100)', intIn(1, 1000))
    .action(action(env, async (ctx, opts: { sandbox?: string; limit?: number }) => {
      const entries = await listAudit({ ...ctx.connection, ...(opts.sandbox !== undefined ? { sandboxId: opts.sandbox } : {}), ...(opts.limit !== undefined ? { limit: opts.limit } : {}) });
      ctx.output({ entries }, () => auditTable(entries));
    }));
}
