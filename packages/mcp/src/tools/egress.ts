/** Governance of a sandbox's outbound network: read and replace its egress policy, read what it did. */
import { z } from 'zod';
import { EgressMode } from '@ramify/contracts';
import type { EgressLogEntry, EgressPolicyInfo } from '@ramify/sdk';
import { sandboxId } from './args.js';
import { defineTool, invalidArgument, READ_ONLY, type Tool } from './tool.js';

/** Most egress log entries one call returns (the daemon keeps more; this is its own limit). */
export const MAX_EGRESS_LOG = 1000;

const policyText = (p: EgressPolicyInfo): string =>
  p.mode === 'allowlist' ? `allowlist: ${p.rules.join(', ')}` : p.mode === 'deny-all' ? 'deny-all: nothing leaves the sandbox' : 'open: everything allowed but the host, other sandboxes and metadata addresses';

const entryLine = (e: EgressLogEntry): string =>
  `${e.at} ${e.verdict} ${e.protocol} ${e.destination}${e.port !== null ? `:${e.port}` : ''}${e.name ? ` (${e.name})` : ''}${e.rule ? ` by rule ${e.rule}` : ''}`;

const egressGet = defineTool({
  name: 'egress_get',
  title: 'Get the egress policy',
  description: "A sandbox's outbound network policy in force: mode (open, allowlist, deny-all) and its allow rules.",
  input: z.strictObject({ sandboxId }),
  hints: READ_ONLY,
  async run(args, ctx) {
    const policy = await ctx.sandbox(args.sandboxId).getEgress();
    return { text: policyText(policy), data: { policy } };
  },
});

const egressSet = defineTool({
  name: 'egress_set',
  title: 'Set the egress policy',
  description: "Replace a sandbox's outbound network policy live: allow rules (host, *.host, host:port, ip, cidr, *), or mode deny-all or open.",
  input: z.strictObject({
    sandboxId,
    rules: z.array(z.string().max(300)).max(1000).optional().describe("allow rules, in order: 'pypi.org', '*.github.com', 'example.com:443', '10.0.0.0/8', '*' (an allowlist: everything else is denied)"),
    mode: EgressMode.optional().describe("deny-all (nothing leaves), open (everything but the host, other sandboxes and metadata addresses), or allowlist (with rules, the default when rules are given); needed when no rules are given"),
  }),
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  async run(args, ctx) {
    // The API takes no rules as 'open'; a model sending [] most likely means 'nothing': make it say which.
    if (args.mode === undefined && (args.rules === undefined || args.rules.length === 0)) {
      throw invalidArgument('mode', "no rules and no mode: say mode: 'deny-all' to let nothing out, or mode: 'open' to open egress");
    }
    const policy = await ctx.sandbox(args.sandboxId).setEgress({ ...(args.mode !== undefined ? { mode: args.mode } : {}), ...(args.rules !== undefined ? { rules: args.rules } : {}) });
    return { text: `egress now ${policyText(policy)}`, data: { policy } };
  },
});

const egressLog = defineTool({
  name: 'egress_log',
  title: 'Read the egress log',
  description: "What a sandbox's outbound connections and DNS lookups were, newest first: allowed or denied, destination, name, the rule that allowed it.",
  input: z.strictObject({
    sandboxId,
    limit: z.number().int().min(1).max(MAX_EGRESS_LOG).default(100).describe(`most entries (max ${MAX_EGRESS_LOG})`),
    verdict: z.enum(['allowed', 'denied']).optional().describe('only these verdicts'),
  }),
  hints: READ_ONLY,
  async run(args, ctx) {
    const entries = (await ctx.sandbox(args.sandboxId).getEgressLog({ limit: args.limit })).filter((e) => args.verdict === undefined || e.verdict === args.verdict);
    return { text: entries.length === 0 ? 'no egress recorded' : entries.map(entryLine).join('\n'), data: { entries } };
  },
});

/** The egress tools. */
export const egressTools: Tool[] = [egressGet, egressSet, egressLog];
