/** `ramify sandbox egress set|get|log`: a sandbox's egress policy (allowlist, open or deny-all) and its log. */
import { Option, type Command } from 'commander';
import { Sandbox, type EgressLogEntry, type EgressPolicyInfo, type EgressPolicyRequest } from '@ramify/sdk';
import { action, type CliEnv } from '../context.js';
import { intIn } from '../parse.js';
import { renderFields, renderTable } from '../output/table.js';
import { formatRelative } from '../output/format.js';

const RULE_GRAMMAR = `Rules, one argument each (quote wildcards for the shell):
  pypi.org                  a host (any port)
  '*.githubusercontent.com' its subdomains (not the name itself)
  pypi.org:443              a host on a port; ports are N or N-M (1-65535)
  192.0.2.10[:port]         an IPv4 address
  10.0.0.0/8[:port]         an IPv4 network
  '*'                       everything
No rules = open egress; the first rule makes everything else denied; --deny-all lets nothing out (no
name resolves, no address is reachable). A host has a dot: a single label such as 'none' or 'localhost'
is refused. IPv6 is always dropped.`;

/** Repeatable `--egress RULE` collected into a list. */
export function collectRule(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** What `--deny-all` asks for (`ramify sandbox create --deny-all`, `egress set --deny-all`). */
export const DENY_ALL: EgressPolicyRequest = { mode: 'deny-all' };

/** The MODE line of a policy. */
export function modeText(policy: Pick<EgressPolicyInfo, 'mode' | 'rules'>): string {
  const closed = 'metadata/link-local, the host and other sandboxes stay closed';
  if (policy.mode === 'deny-all') return 'deny-all (nothing leaves: no name resolves, no address is reachable)';
  return policy.mode === 'open'
    ? `open (no rules: all egress allowed; ${closed}, as do private ranges)`
    : policy.rules.includes('*')
      ? `open ('*': all egress allowed; ${closed}, as do private ranges unless a rule names them)`
      : `allowlist (${policy.rules.length} rule${policy.rules.length === 1 ? '' : 's'}; everything else denied)`;
}

function policyText(policy: EgressPolicyInfo): string {
  const updated = policy.updatedAt ? `${policy.updatedAt} (${formatRelative(policy.updatedAt)})` : 'never set';
  const head = renderFields([['mode', modeText(policy)], ['updated', updated]]);
  return policy.rules.length === 0 ? head : `${head}\nrules:\n${policy.rules.map((r) => `  ${r}`).join('\n')}`;
}

function logTable(entries: EgressLogEntry[]): string {
  if (entries.length === 0) return 'no egress log entries';
  // PEER: the sandbox at the other end of a connection between sandboxes (sandbox id on network), '-' for the internet.
  // A failed DNS lookup has no destination: its DNS error stands there (NXDOMAIN, SERVFAIL).
  return renderTable(['AT', 'VERDICT', 'PROTO', 'DESTINATION', 'NAME', 'RULE', 'PEER'], entries.map((e) => [
    e.at, e.verdict, e.protocol, e.error ?? (e.port === null ? e.destination : `${e.destination}:${e.port}`), e.name ?? '-', e.rule ?? '-',
    e.peer ? `${e.peer.sandboxId}${e.peer.network ? ` on ${e.peer.network}` : ''}` : '-',
  ]));
}

/** Register `sandbox egress` and its subcommands on `sandbox`. */
export function registerEgress(sandbox: Command, env: CliEnv): void {
  const egress = sandbox.command('egress').description("show or replace a sandbox's egress policy (allowlist, open or deny-all), read its egress log")
    .addHelpText('after', `\n${RULE_GRAMMAR}`);

  const set = egress.command('set').argument('<id>', 'sandbox id').argument('[rules...]', 'allow rules (see below); together they replace the old ones')
    .option('--open', 'remove every rule: allow all egress again')
    .addOption(new Option('--deny-all', 'deny all egress: nothing leaves (no name resolves, no address is reachable)').conflicts('open'))
    .description('replace the egress policy, atomically and live (running or paused; no restart)')
    .addHelpText('after', `\n${RULE_GRAMMAR}\n\nExamples:\n  ramify sandbox egress set sbx_1 pypi.org '*.githubusercontent.com:443' 10.0.0.0/8\n  ramify sandbox egress set sbx_1 --open\n  ramify sandbox egress set sbx_1 --deny-all`);
  set.action(action(env, async (ctx, id: string, rules: string[], opts: { open?: boolean; denyAll?: boolean }) => {
    const usage = (message: string): never => set.error(message, { exitCode: 2, code: 'ramify.usage' });
    if (opts.open && rules.length > 0) usage('error: --open removes every rule: give either rules or --open');
    if (opts.denyAll && rules.length > 0) usage('error: --deny-all lets nothing out and takes no rules: give either rules or --deny-all');
    if (!opts.open && !opts.denyAll && rules.length === 0) usage('error: give at least one rule, --open to allow all egress, or --deny-all to deny all of it');
    const policy = await Sandbox.fromId(id, ctx.connection).setEgress(opts.denyAll ? DENY_ALL : rules);
    ctx.output(policy, () => policyText(policy));
  }));

  egress.command('get').argument('<id>', 'sandbox id').description('show the egress policy in force (normalised rules)')
    .action(action(env, async (ctx, id: string) => {
      const policy = await Sandbox.fromId(id, ctx.connection).getEgress();
      ctx.output(policy, () => policyText(policy));
    }));

  egress.command('log').argument('<id>', 'sandbox id').description('show egress verdicts, newest first (allowed and denied connections, DNS names answered, refused or not found)')
    .option('--limit <n>', 'at most this many entries (1-1000)', intIn(1, 1000))
    .action(action(env, async (ctx, id: string, opts: { limit?: number }) => {
      const entries = await Sandbox.fromId(id, ctx.connection).getEgressLog({ limit: opts.limit });
      ctx.output(entries, () => logTable(entries));
    }));
}
