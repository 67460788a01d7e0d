/** Event tools: a sandbox's timeline (lifecycle events, commands run, egress and ingress decisions). */
import { z } from 'zod';
import type { TimelineEntry } from '@ramify/sdk';
import { sandboxId } from './args.js';
import { defineTool, READ_ONLY, type Tool } from './tool.js';

/** One line of a timeline entry. */
function entryLine(e: TimelineEntry): string {
  switch (e.kind) {
    case 'lifecycle':
      return `${e.at} ${e.event.type} (${e.event.cause})`;
    case 'command':
      return `${e.at} command \`${e.command.cmd}\` exit ${e.command.exitCode ?? e.command.signal ?? e.command.error} in ${e.command.durationMs} ms`;
    case 'egress':
      return `${e.at} egress ${e.egress.verdict} ${e.egress.protocol} ${e.egress.name ?? e.egress.destination}${e.egress.port === null ? '' : `:${e.egress.port}`}`;
    case 'ingress':
      return `${e.at} ingress ${e.ingress.method} ${e.ingress.path} -> ${e.ingress.status}`;
  }
}

const eventsList = defineTool({
  name: 'events_list',
  title: "A sandbox's timeline",
  description: 'What happened in a sandbox, newest first: lifecycle events (created, paused, forked, ...), commands run with exit code and duration, egress and ingress decisions.',
  input: z.strictObject({
    sandboxId,
    limit: z.number().int().min(1).max(1000).default(50).describe('the newest N entries (1-1000, default 50)'),
  }),
  hints: READ_ONLY,
  async run(args, ctx) {
    const entries = await ctx.sandbox(args.sandboxId).timeline({ limit: args.limit });
    return { text: entries.length === 0 ? 'nothing yet' : entries.map(entryLine).join('\n'), data: { entries } };
  },
});

/** The event tools. */
export const eventTools: Tool[] = [eventsList];
