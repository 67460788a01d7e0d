/**
 * Private networks: create, list and delete them, and put a sandbox on one or take it off, live.
 * Sandboxes on a network reach each other by any protocol and port as `<alias>.<network>.internal`;
 * everything else between sandboxes stays refused (see the repository's docs/design/NETWORKS.md).
 */
import { z } from 'zod';
import { Network, type NetworkInfo } from '@ramify/sdk';
import { sandboxId } from './args.js';
import { defineTool, READ_ONLY, type Tool } from './tool.js';

const network = z.string().min(1).max(128).describe('network name (or id)');
const label = (what: string): z.ZodString => z.string().min(1).max(63).describe(`${what}: a DNS label (a-z, 0-9, '-'; not starting or ending with '-')`);

const networkText = (n: NetworkInfo): string =>
  `${n.name} (${n.id}): ${n.members.length === 0 ? 'no sandboxes' : n.members.map((m) => `${m.hostname} = ${m.sandboxId}`).join(', ')}`;

const networkCreate = defineTool({
  name: 'network_create',
  title: 'Create a private network',
  description: 'Create a private network: sandboxes put on it reach each other as <alias>.<network>.internal, and nothing else does.',
  input: z.strictObject({ name: label('the network name') }),
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run(args, ctx) {
    const created = await Network.create(args.name, ctx.connection);
    return { text: `created network ${networkText(created)}`, data: { network: created } };
  },
});

const networkList = defineTool({
  name: 'network_list',
  title: 'List private networks',
  description: 'The private networks, oldest first, each with its sandboxes and their names on it.',
  input: z.strictObject({}),
  hints: READ_ONLY,
  async run(_args, ctx) {
    const networks = await Network.list(ctx.connection);
    return { text: networks.length === 0 ? 'no networks' : networks.map(networkText).join('\n'), data: { networks } };
  },
});

const networkDelete = defineTool({
  name: 'network_delete',
  title: 'Delete a private network',
  description: 'Delete a private network; refused (NETWORK_IN_USE, naming them) while sandboxes are on it.',
  input: z.strictObject({ network }),
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  async run(args, ctx) {
    await Network.delete(args.network, ctx.connection);
    return { text: `deleted network ${args.network}`, data: { network: args.network, deleted: true } };
  },
});

const networkAttach = defineTool({
  name: 'network_attach',
  title: 'Put a sandbox on a network',
  description: 'Put a running or paused sandbox on a private network, live; it is then reachable there as <alias>.<network>.internal.',
  input: z.strictObject({ sandboxId, network, alias: label('its name on the network (default sbx- and the last 8 characters of its id)').optional() }),
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(args, ctx) {
    const m = await ctx.sandbox(args.sandboxId).networks.attach(args.network, args.alias !== undefined ? { alias: args.alias } : {});
    return { text: `${args.sandboxId} is on ${m.network} as ${m.hostname}`, data: { sandboxId: args.sandboxId, membership: m } };
  },
});

const networkDetach = defineTool({
  name: 'network_detach',
  title: 'Take a sandbox off a network',
  description: "Take a sandbox off a private network, live: its open connections to the network's sandboxes are cut.",
  input: z.strictObject({ sandboxId, network }),
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  async run(args, ctx) {
    await ctx.sandbox(args.sandboxId).networks.detach(args.network);
    return { text: `${args.sandboxId} is off ${args.network}`, data: { sandboxId: args.sandboxId, network: args.network, detached: true } };
  },
});

/** The private network tools. */
export const networkTools: Tool[] = [networkCreate, networkList, networkDelete, networkAttach, networkDetach];
