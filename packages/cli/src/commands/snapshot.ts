/** `ramify snapshot list|rm`. */
import type { Command } from 'commander';
import { deleteSnapshot, listSnapshots, type SnapshotInfo } from '@ramify/sdk';
import { action, type CliEnv } from '../context.js';
import { renderTable } from '../output/table.js';
import { formatBytes, formatRelative } from '../output/format.js';
import { plainIds, templateLabels, type TemplateLabel } from '../output/template-labels.js';

/**
 * The PARENT cell of each snapshot: its parent's id, marked `(deleted)` when the parent is not among
 * `snaps` (the API lists every snapshot, so a parent missing from the list no longer exists).
 */
export function parentCells(snaps: readonly SnapshotInfo[]): string[] {
  const ids = new Set(snaps.map((s) => s.id));
  return snaps.map((s) => (s.parentSnapshotId === null ? '-' : ids.has(s.parentSnapshotId) ? s.parentSnapshotId : `${s.parentSnapshotId} (deleted)`));
}

function snapshotTable(snaps: SnapshotInfo[], template: TemplateLabel): string {
  if (snaps.length === 0) return 'no snapshots';
  const parents = parentCells(snaps);
  return renderTable(['ID', 'NAME', 'KIND', 'RUNTIME', 'TEMPLATE', 'SANDBOX', 'PARENT', 'SIZE', 'CREATED'],
    snaps.map((s, i) => [s.id, s.name ?? '-', s.kind, s.runtime, template(s.templateId), s.sandboxId ?? '-', parents[i], formatBytes(s.sizeBytes), formatRelative(s.createdAt)]));
}

/** Register `snapshot` and its subcommands on `program`. */
export function registerSnapshot(program: Command, env: CliEnv): void {
  const snapshot = program.command('snapshot').description('list and delete snapshots');

  snapshot.command('list').alias('ls').description('list snapshots (template images, pause and fork points, named snapshots)')
    .addHelpText('after', `
TEMPLATE is the name of the template the snapshot descends from (for KIND template: whose image it is);
'tpl_... (deleted)': that template has since been deleted.
PARENT is the snapshot the snapshot's sandbox was started or forked from; '(deleted)' after it: that
snapshot has since been deleted (every snapshot is a whole image: the ones made from it do not need it).
--json keeps the plain templateId and parentSnapshotId.`)
    .action(action(env, async (ctx) => {
      const [snaps, template] = await ctx.spin('listing snapshots', () => Promise.all([
        listSnapshots(ctx.connection),
        ctx.json ? plainIds : templateLabels(ctx),
      ]));
      ctx.output(snaps, () => snapshotTable(snaps, template));
    }));

  snapshot.command('rm').alias('delete').argument('<snapshots...>', "snapshot ids (snap_...) or names (as given to 'ramify sandbox snapshot --name')")
    .description("delete snapshots by id or name, in order (refused while a paused sandbox resumes from one, or for a template's image)")
    .addHelpText('after', `
Sandboxes started or forked from a snapshot do not need it (every snapshot is a whole image); a
template's images go with 'ramify template delete'. Stops at the first snapshot that cannot be deleted:
the ones before it are deleted (printed as deleted; --json prints {"deleted": [...]} only when all were).`)
    .action(action(env, async (ctx, refs: string[]) => {
      for (const ref of refs) {
        await deleteSnapshot(ref, ctx.connection);
        if (!ctx.json) ctx.print(`${ref} deleted`);
      }
      if (ctx.json) ctx.output({ deleted: refs }, () => '');
    }));
}
