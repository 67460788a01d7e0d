/**
 * `ramify events [--follow]`: the team's lifecycle events (docs/design/EVENTS.md); `ramify sandbox events
 * ID`: one sandbox's timeline (its events, commands, egress and ingress decisions).
 */
import { EVENT_TYPES } from '@ramify/contracts/client';
import type { EventType } from '@ramify/contracts';
import { Events, Sandbox, type SandboxEvent, type TimelineEntry } from '@ramify/sdk';
import { Option, type Command } from 'commander';
import { action, type CliContext, type CliEnv } from '../context.js';
import { intIn, listOf } from '../parse.js';
import { renderTable } from '../output/table.js';

const short = (data: Record<string, unknown>): string => {
  const text = Object.entries(data).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)}`).join(' ');
  return text.length > 80 ? `${text.slice(0, 79)}…` : text || '-';
};

const eventRow = (e: SandboxEvent): string[] => [e.id, e.at, e.type, e.sandboxId ?? '-', e.cause, e.keyId ?? '-', short(e.data)];
const EVENT_HEADERS = ['ID', 'AT', 'TYPE', 'SANDBOX', 'CAUSE', 'KEY', 'DATA'];

/** One human line of a timeline entry. */
function timelineRow(entry: TimelineEntry): string[] {
  switch (entry.kind) {
    case 'lifecycle':
      return [entry.at, 'event', `${entry.event.type} (${entry.event.cause}${entry.event.keyId ? ` ${entry.event.keyId}` : ''}) ${short(entry.event.data)}`];
    case 'command': {
      const c = entry.command;
      const outcome = c.error ? c.error : c.signal ? `signal ${c.signal}` : `exit ${c.exitCode}`;
      return [entry.at, 'command', `${c.cmd}  → ${outcome}, ${c.durationMs} ms${c.keyId ? ` (${c.keyId})` : ''}`];
    }
    case 'egress': {
      const e = entry.egress;
      // A failed lookup: `allowed dns pypi.org → SERVFAIL (rule pypi.org)`.
      const failed = e.error ? ` → ${e.error}` : '';
      return [entry.at, 'egress', `${e.verdict} ${e.protocol} ${e.name ?? e.destination}${e.port === null ? '' : `:${e.port}`}${failed}${e.rule ? ` (rule ${e.rule})` : ''}`];
    }
    case 'ingress': {
      const i = entry.ingress;
      return [entry.at, 'ingress', `${i.method} ${i.path} → ${i.status} (port ${i.port}, ${i.client}, ${i.durationMs} ms${i.woke ? ', woke it' : ''})`];
    }
  }
}

const TYPES_HELP = `Event types: ${EVENT_TYPES.join(', ')}.`;

/** Register `events` on the program. */
export function registerEvents(program: Command, env: CliEnv): void {
  program.command('events')
    .description("the team's lifecycle events, oldest first (--follow: then live, until Ctrl-C)")
    .option('--sandbox <id>', "only this sandbox's events")
    .option('--type <types>', 'only these types, comma-separated (repeatable)', listOf(EVENT_TYPES))
    .option('--after <cursor>', 'only events after this one (an event id of your team: the last one you saw, or a nextCursor)')
    .option('--limit <n>', 'at most this many (1-1000, default 100; with --follow: the replay is all after --after)', intIn(1, 1000))
    .addOption(new Option('--newest-first', 'newest first').conflicts('follow'))
    .option('-f, --follow', 'keep printing new events as they happen (--json: one JSON object per line)')
    .addHelpText('after', `
${TYPES_HELP}
Events are kept for the daemon's retention (ramify serve --events-retention, default 7d).
  ramify events --sandbox sbx_... --type sandbox.lifecycle.paused,sandbox.lifecycle.resumed
  ramify events --follow --json | jq .type`)
    .action(action(env, async (ctx, opts: { sandbox?: string; type?: EventType[]; after?: string; limit?: number; newestFirst?: boolean; follow?: boolean }) => {
      const filter = { ...(opts.sandbox !== undefined ? { sandboxId: opts.sandbox } : {}), ...(opts.type ? { types: opts.type } : {}), ...(opts.after !== undefined ? { after: opts.after } : {}) };
      if (opts.follow) return follow(ctx, filter);
      const page = await Events.list({ ...ctx.connection, ...filter, ...(opts.limit !== undefined ? { limit: opts.limit } : {}), ...(opts.newestFirst ? { order: 'desc' as const } : {}) });
      ctx.output(page, () => (page.events.length === 0 ? 'no events' : renderTable(EVENT_HEADERS, page.events.map(eventRow))));
      if (page.hasMore && page.nextCursor) ctx.note(`more events: --after ${page.nextCursor}`);
    }));
}

/** Print events as they come until SIGINT/SIGTERM, or until the stream ends with an error. */
async function follow(ctx: CliContext, filter: { sandboxId?: string; types?: EventType[]; after?: string }): Promise<void> {
  const print = (e: SandboxEvent): void => ctx.print(ctx.json ? JSON.stringify(e) : eventRow(e).join('  '));
  const stream = await Events.stream({ ...ctx.connection, ...filter, onEvent: print });
  if (!ctx.json) ctx.note('ramify: following events; Ctrl-C stops');
  const signalled = new Promise<null>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(null);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  const why = await Promise.race([signalled, stream.ended]);
  stream.stop();
  if (why) throw why;
}

/** Register `sandbox events` (the timeline) on the `sandbox` command. */
export function registerTimeline(sandbox: Command, env: CliEnv): void {
  sandbox.command('events').alias('timeline').argument('<id>', 'sandbox id')
    .description("a sandbox's timeline: lifecycle events, commands run (exit code, duration), egress and ingress decisions, newest first")
    .option('--oldest-first', 'oldest first')
    .option('--limit <n>', 'the newest N entries (1-1000, default 200)', intIn(1, 1000))
    .addHelpText('after', `
The audit trail of what an agent did in it. Commands: those started over the API whose exit the daemon
saw. A killed sandbox keeps its events and commands; its egress and ingress logs end with it.`)
    .action(action(env, async (ctx, id: string, opts: { oldestFirst?: boolean; limit?: number }) => {
      const entries = await Sandbox.fromId(id, ctx.connection).timeline({ ...(opts.limit !== undefined ? { limit: opts.limit } : {}), ...(opts.oldestFirst ? { order: 'asc' as const } : {}) });
      ctx.output({ entries }, () => (entries.length === 0 ? 'nothing yet' : renderTable(['AT', 'KIND', 'WHAT'], entries.map(timelineRow))));
    }));
}

