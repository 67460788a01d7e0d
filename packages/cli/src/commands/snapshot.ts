/** `ramify snapshot list|rm`. */
import type { Command } from 'commander';
import { deleteSnapshot, listSnapshots } from '@ramify/sdk';
import { action, type CliEnv } from '../context.js';
import { renderTable } from '../output/table.js';
import { formatBytes, formatRelative } from '../output/format.js';

/** Register `snapshot` and its subcommands on `program`. */
export function registerSnapshot(program: Command, env: CliEnv): void {
  const snapshot = program.command('snapshot').description('list and delete snapshots');

  snapshot.command('list').alias('ls').description('list snapshots (template images, pause and fork points, named snapshots)')
    .action(action(env, async (ctx) => {
      const snaps = await ctx.spin('listing snapshots', () => listSnapshots(ctx.connection));
      ctx.output(snaps, () => (snaps.length === 0 ? 'no snapshots' : renderTable(['ID', 'NAME', 'KIND', 'SANDBOX', 'PARENT', 'SIZE', 'CREATED'],
        snaps.map((s) => [s.id, s.name ?? '-', s.kind, s.sandboxId ?? '-', s.parentSnapshotId ?? '-', formatBytes(s.sizeBytes), formatRelative(s.createdAt)]))));
    }));

  snapshot.command('rm').argument('<ids...>', 'snapshot ids or names').description('delete snapshots (refused while a sandbox still needs one)')
    .action(action(env, async (ctx, ids: string[]) => {
      for (const id of ids) await deleteSnapshot(id, ctx.connection);
      ctx.output({ deleted: ids }, () => ids.map((id) => `${id} deleted`).join('\n'));
    }));
}
