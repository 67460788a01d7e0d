/** `ramify snapshot list|get|rm`. */
import type { Command } from 'commander';
import { deleteSnapshot, getSnapshot, listSnapshots, type SnapshotInfo } from '@ramify/sdk';
import { action, type CliContext, type CliEnv } from '../context.js';
import { renderFields, renderTable } from '../output/table.js';
import { modeText } from './sandbox-egress.js';
import { formatBytes, formatDuration, formatRelative } from '../output/format.js';
import { plainIds, templateLabels, type TemplateLabel } from '../output/template-labels.js';

/**
 * The PARENT cell of each snapshot: its parent's id, marked `(deleted)` when the parent is not among
 * `snaps` (the API lists every snapshot, so a parent missing from the list no longer exists).
 */
export function parentCells(snaps: readonly SnapshotInfo[]): string[] {
  const ids = new Set(snaps.map((s) => s.id));
  return snaps.map((s) => (s.parentSnapshotId === null ? '-' : ids.has(s.parentSnapshotId) ? s.parentSnapshotId : `${s.parentSnapshotId} (deleted)`));
}

/** The PARENT field of `snapshot get`: as {@link parentCells} marks it, from one lookup of the parent. */
async function parentCell(snap: SnapshotInfo, ctx: CliContext): Promise<string> {
  if (snap.parentSnapshotId === null) return '-';
  try {
    await getSnapshot(snap.parentSnapshotId, ctx.connection);
    return snap.parentSnapshotId;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'SNAPSHOT_NOT_FOUND') return `${snap.parentSnapshotId} (deleted)`;
    throw error;
  }
}

/** The snapshot's id when it is a template image (its TEMPLATE cell names the template listing it). */
const imageOf = (s: SnapshotInfo): string | undefined => (s.kind === 'template' ? s.id : undefined);

/** The EGRESS cell: the recorded policy's mode (`allowlist (N)` with its rule count), `-` when none is recorded. */
export function egressCell(egress: SnapshotInfo['egress']): string {
  if (egress === null) return '-';
  return egress.mode === 'allowlist' ? `allowlist (${egress.rules.length})` : egress.mode;
}

function snapshotTable(snaps: SnapshotInfo[], template: TemplateLabel): string {
  if (snaps.length === 0) return 'no snapshots';
  const parents = parentCells(snaps);
  return renderTable(['ID', 'NAME', 'KIND', 'RUNTIME', 'TEMPLATE', 'SANDBOX', 'PARENT', 'EGRESS', 'SIZE', 'CREATED'],
    snaps.map((s, i) => [
      s.id, s.name ?? '-', s.kind, s.runtime, template(s.templateId, imageOf(s)), s.sandboxId ?? '-', parents[i], egressCell(s.egress), formatBytes(s.sizeBytes), formatRelative(s.createdAt),
    ]));
}

/** A snapshot's recorded private networks (recorded only: a sandbox made from it joins none). */
function networksCell(networks: SnapshotInfo['networks']): string {
  if (networks === null) return 'none recorded';
  if (networks.length === 0) return 'none';
  return `${networks.map((n) => `${n.alias}.${n.network}.internal`).join(', ')} (recorded; a sandbox made from it joins none)`;
}

function snapshotText(s: SnapshotInfo, template: TemplateLabel, parent: string): string {
  const egress = s.egress === null
    ? `none recorded (${s.kind === 'template' ? 'a template image' : 'taken before policies were recorded, its sandbox gone'}): sandboxes made from it start open`
    : modeText(s.egress);
  const head = renderFields([
    ['id', s.id], ['name', s.name ?? '-'], ['kind', s.kind], ['runtime', s.runtime], ['template', template(s.templateId, imageOf(s))], ['sandbox', s.sandboxId ?? '-'],
    ['parent', parent], ['size', formatBytes(s.sizeBytes)], ['created', `${s.createdAt} (${formatRelative(s.createdAt)})`],
    ['auto-pause', s.autoPause ? `after ${formatDuration(s.autoPause.idleMs)} idle` : 'off'], ['networks', networksCell(s.networks)],
    ['egress', egress],
  ]);
  return s.egress === null || s.egress.rules.length === 0 ? head : `${head}\negress rules:\n${s.egress.rules.map((r) => `  ${r}`).join('\n')}`;
}

/** Register `snapshot` and its subcommands on `program`. */
export function registerSnapshot(program: Command, env: CliEnv): void {
  const snapshot = program.command('snapshot').description('list, show and delete snapshots');

  snapshot.command('list').alias('ls').description('list snapshots (template images, pause and fork points, named snapshots)')
    .addHelpText('after', `
TEMPLATE is the name of the template the snapshot descends from (for KIND template: whose image it is;
'older build of NAME': an image a rebuild replaced, kept while a sandbox made from it lives);
'tpl_... (deleted)': that template has since been deleted.
PARENT is the snapshot the snapshot's sandbox was started or forked from; '(deleted)' after it: that
snapshot has since been deleted (every snapshot is a whole image: the ones made from it do not need it).
EGRESS is the egress policy the snapshot recorded, which a sandbox created from it starts with (unless
'sandbox create' gives --egress or --deny-all): open, deny-all, or allowlist (its rule count); '-': none
recorded (template images; snapshots taken before policies were recorded whose sandbox is gone): open.
--json keeps the plain templateId and parentSnapshotId.`)
    .action(action(env, async (ctx) => {
      const [snaps, template] = await ctx.spin('listing snapshots', () => Promise.all([
        listSnapshots(ctx.connection),
        ctx.json ? plainIds : templateLabels(ctx),
      ]));
      ctx.output(snaps, () => snapshotTable(snaps, template));
    }));

  snapshot.command('get').argument('<snapshot>', 'snapshot id (snap_...) or name')
    .description('show one snapshot, with the egress policy a sandbox created from it starts with')
    .action(action(env, async (ctx, ref: string) => {
      const [snap, template] = await Promise.all([getSnapshot(ref, ctx.connection), ctx.json ? plainIds : templateLabels(ctx)]);
      const parent = ctx.json ? '' : await parentCell(snap, ctx);
      ctx.output(snap, () => snapshotText(snap, template, parent));
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
