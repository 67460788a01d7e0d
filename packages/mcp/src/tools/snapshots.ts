/** Snapshot tools: take a named snapshot of a sandbox, list snapshots. */
import { z } from 'zod';
import { mustBe } from '@ramify/contracts';
import { listSnapshots } from '@ramify/sdk';
import { sandboxId } from './args.js';
import { snapshotLine } from './format.js';
import { defineTool, READ_ONLY, type Tool } from './tool.js';

const snapshotCreate = defineTool({
  name: 'snapshot_create',
  title: 'Snapshot a sandbox',
  description: "Save a sandbox's memory, processes and files as a named snapshot that outlives it; sandbox_create with snapshot starts new sandboxes from it.",
  input: z.strictObject({
    sandboxId,
    name: z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9._-]{0,127}$/, mustBe('a snapshot name: 1-128 of [a-zA-Z0-9._-], starting with a letter or digit')).describe('unique name, 1-128 of [a-zA-Z0-9._-]'),
  }),
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run(args, ctx) {
    const snapshot = await ctx.sandbox(args.sandboxId).snapshot({ name: args.name });
    return { text: `snapshot ${snapshotLine(snapshot)}`, data: { snapshot } };
  },
});

const snapshotList = defineTool({
  name: 'snapshot_list',
  title: 'List snapshots',
  description: 'List snapshots (named, pause and fork points, template images) with kind, size and source sandbox; filter by kind.',
  input: z.strictObject({
    kind: z.enum(['named', 'pause', 'fork', 'template']).optional().describe('only snapshots of this kind; named ones are those snapshot_create made'),
  }),
  hints: READ_ONLY,
  async run(args, ctx) {
    const snapshots = (await listSnapshots(ctx.connection)).filter((s) => args.kind === undefined || s.kind === args.kind);
    return { text: snapshots.length === 0 ? 'no snapshots' : snapshots.map(snapshotLine).join('\n'), data: { snapshots } };
  },
});

/** The snapshot tools. */
export const snapshotTools: Tool[] = [snapshotCreate, snapshotList];
