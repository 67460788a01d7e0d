/**
 * `ramify network create|list|get|rm` (private networks) and `ramify sandbox network attach|detach|list`
 * (one sandbox's memberships), plus the `--network` option of `sandbox create`.
 */
import { DNS_LABEL_PATTERN, DNS_LABEL_RULE } from '@ramify/contracts/client';
import { Network, Sandbox, type NetworkInfo, type NetworkJoinRequest, type SandboxNetworkInfo } from '@ramify/sdk';
import { InvalidArgumentError, type Command } from 'commander';
import { action, type CliEnv } from '../context.js';
import { renderFields, renderTable } from '../output/table.js';

export const NETWORKS_HELP = `Private networks: sandboxes on a network reach each other by any protocol and port (TCP, UDP,
ICMP), both ways, at their addresses or by name, <alias>.<network>.internal. The daemon's resolver
answers those names only to sandboxes on that network (NXDOMAIN for everyone else; never asked
upstream). Everything else between sandboxes stays refused, as does the host; egress policies still
decide the internet alone. Attach and detach work live (running or paused sandboxes): a detach cuts
open connections at once. A fork joins its parent's networks as <parent alias>-1, -2, ... (so
siblings and the parent find each other), unless 'sandbox fork --no-networks'. A snapshot records
its sandbox's networks; a sandbox created from it joins none unless --network asks.
Names and aliases are DNS labels: 1-63 of a-z, 0-9 and '-', not starting or ending with '-'.
The default alias is sbx-<last 8 characters of the sandbox id>.`;

/** Repeatable `--network NAME[:ALIAS]`. */
export function collectNetwork(value: string, previous: NetworkJoinRequest[] = []): NetworkJoinRequest[] {
  const [network = '', alias, ...rest] = value.split(':');
  if (network === '' || rest.length > 0 || alias === '') throw new InvalidArgumentError('expected NETWORK or NETWORK:ALIAS');
  if (alias !== undefined && !DNS_LABEL_PATTERN.test(alias)) throw new InvalidArgumentError(`the alias must be ${DNS_LABEL_RULE}`);
  return [...previous, { network, ...(alias !== undefined ? { alias } : {}) }];
}

function networksTable(networks: NetworkInfo[]): string {
  if (networks.length === 0) return "no networks (ramify network create NAME)";
  return renderTable(['NAME', 'ID', 'MEMBERS', 'CREATED'], networks.map((n) => [n.name, n.id, String(n.members.length), n.createdAt]));
}

function networkText(n: NetworkInfo): string {
  const fields = renderFields([['name', n.name], ['id', n.id], ['created', n.createdAt]]);
  if (n.members.length === 0) return `${fields}\nno sandboxes on it`;
  return `${fields}\n${renderTable(['HOSTNAME', 'SANDBOX', 'ATTACHED'], n.members.map((m) => [m.hostname, m.sandboxId, m.attachedAt]))}`;
}

function membershipsTable(networks: SandboxNetworkInfo[]): string {
  if (networks.length === 0) return 'on no network';
  return renderTable(['NETWORK', 'ALIAS', 'HOSTNAME', 'ATTACHED'], networks.map((n) => [n.network, n.alias, n.hostname, n.attachedAt]));
}

/** Register `network` on the program. */
export function registerNetworks(program: Command, env: CliEnv): void {
  const network = program.command('network').description('private networks: sandboxes that reach each other by name').addHelpText('after', `\n${NETWORKS_HELP}`);

  network.command('create').argument('<name>', 'a DNS label, unique').description('create a network (--json: its info)')
    .action(action(env, async (ctx, name: string) => {
      const info = await Network.create(name, ctx.connection);
      ctx.output(info, () => `${info.name} ${info.id}`);
    }));

  network.command('list').alias('ls').description('networks with their member counts (--json: with members)')
    .action(action(env, async (ctx) => {
      const networks = await Network.list(ctx.connection);
      ctx.output({ networks }, () => networksTable(networks));
    }));

  network.command('get').argument('<network>', 'name or id').description('a network and its sandboxes (their hostnames)')
    .action(action(env, async (ctx, name: string) => {
      const info = await Network.get(name, ctx.connection);
      ctx.output(info, () => networkText(info));
    }));

  network.command('rm').alias('delete').argument('<network>', 'name or id')
    .description('delete a network; refused (NETWORK_IN_USE, naming them) while sandboxes are on it')
    .action(action(env, async (ctx, name: string) => {
      await Network.delete(name, ctx.connection);
      ctx.output({ network: name, deleted: true }, () => `deleted ${name}`);
    }));
}

/** Register `sandbox network attach|detach|list` on `sandbox`. */
export function registerSandboxNetworks(sandbox: Command, env: CliEnv): void {
  const cmd = sandbox.command('network').description("a sandbox's private networks, live").addHelpText('after', `\n${NETWORKS_HELP}`);

  cmd.command('attach').argument('<id>', 'sandbox id').argument('<network>', 'network name or id')
    .option('--alias <name>', 'its name on the network (a DNS label; default sbx-<last 8 of its id>)')
    .description('put a running or paused sandbox on a network; prints its hostname there')
    .action(action(env, async (ctx, id: string, name: string, opts: { alias?: string }) => {
      const m = await Sandbox.fromId(id, ctx.connection).networks.attach(name, opts.alias !== undefined ? { alias: opts.alias } : {});
      ctx.output(m, () => m.hostname);
    }));

  cmd.command('detach').argument('<id>', 'sandbox id').argument('<network>', 'network name or id')
    .description('take a sandbox off a network: open connections to its members are cut (idempotent)')
    .action(action(env, async (ctx, id: string, name: string) => {
      await Sandbox.fromId(id, ctx.connection).networks.detach(name);
      ctx.output({ id, network: name, detached: true }, () => `${id} left ${name}`);
    }));

  cmd.command('list').alias('ls').argument('<id>', 'sandbox id').description('the networks a sandbox is on, with its hostname on each')
    .action(action(env, async (ctx, id: string) => {
      const networks = await Sandbox.fromId(id, ctx.connection).networks.list();
      ctx.output({ networks }, () => membershipsTable(networks));
    }));
}
