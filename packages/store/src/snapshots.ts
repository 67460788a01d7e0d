/**
 * Snapshot and template rows. Both belong to a team (migration 17); names are unique per team.
 */
import { RamifyError, notFound, type AutoPause, type SnapshotNetworks } from '@ramify/contracts';
import type { CanonicalEgressPolicy, SandboxIngress, SnapshotPatch, SnapshotRecord, TemplateRecord } from '@ramify/core';
import type { Selectable } from 'kysely';
import { requireRootfs } from './db.js';
import { conflictOnConstraint } from './errors.js';
import type { Executor, SnapshotsTable, TemplatesTable } from './schema.js';

/**
 * JSON columns: `envs` (migration 8), `egress` (10), `ingress` (11), `auto_pause` (13), `networks` (18), `host_id` (26); NULL
 * where nothing is recorded (template images, rows from before them).
 */
type SnapshotRow = Selectable<SnapshotsTable>;

const snapshotFromRow = (r: SnapshotRow): SnapshotRecord => ({
  id: r.id,
  teamId: r.team_id,
  name: r.name,
  kind: r.kind as SnapshotRecord['kind'],
  status: r.status as SnapshotRecord['status'],
  runtime: r.runtime as SnapshotRecord['runtime'],
  templateId: r.template_id,
  sandboxId: r.sandbox_id,
  parentSnapshotId: r.parent_snapshot_id,
  sizeBytes: r.size_bytes,
  createdAt: r.created_at,
  cpuCount: r.cpu_count,
  memoryMB: r.memory_mb,
  diskSizeMB: r.disk_size_mb,
  rootfsDir: r.rootfs_dir,
  envs: r.envs === null ? null : (JSON.parse(r.envs) as Record<string, string>),
  egress: r.egress === null ? null : (JSON.parse(r.egress) as CanonicalEgressPolicy),
  ingress: r.ingress === null ? null : (JSON.parse(r.ingress) as SandboxIngress),
  autoPause: r.auto_pause === null ? null : (JSON.parse(r.auto_pause) as AutoPause),
  networks: r.networks === null ? null : (JSON.parse(r.networks) as SnapshotNetworks),
  hostId: r.host_id,
});

/** A record's envs as stored: a JSON object, or NULL when unknown. */
const envsColumn = (envs: SnapshotRecord['envs']): string | null => (envs === null ? null : JSON.stringify(envs));
/** A record's ingress as stored: JSON `{ ports, autoResume }`, or NULL when none is recorded. */
const ingressColumn = (ingress: SnapshotRecord['ingress']): string | null => (ingress ? JSON.stringify({ ports: ingress.ports, autoResume: ingress.autoResume }) : null);
/** A record's idle auto-pause as stored: JSON `{ idleMs }`, or NULL when off or not recorded. */
const autoPauseColumn = (autoPause: SnapshotRecord['autoPause']): string | null => (autoPause ? JSON.stringify({ idleMs: autoPause.idleMs }) : null);
/** A record's networks as stored: JSON `[{ network, alias }]` (those fields only), or NULL when not recorded. */
const networksColumn = (networks: SnapshotRecord['networks']): string | null =>
  networks ? JSON.stringify(networks.map((n) => ({ network: n.network, alias: n.alias }))) : null;
/** A record's egress policy as stored: JSON `{ mode, rules }` (nothing else of the object given), or NULL when none is recorded. */
const egressColumn = (egress: SnapshotRecord['egress']): string | null => (egress === null ? null : JSON.stringify({ mode: egress.mode, rules: egress.rules }));

/** @throws RamifyError `CONFLICT` (id or name taken), `INTERNAL` (no root filesystem given). */
export async function insertSnapshot(db: Executor, s: SnapshotRecord): Promise<void> {
  requireRootfs(s.rootfsDir, `snapshot '${s.id}'`);
  try {
    await db
      .insertInto('snapshots')
      .values({
        id: s.id, team_id: s.teamId, name: s.name, kind: s.kind, status: s.status, runtime: s.runtime, template_id: s.templateId, sandbox_id: s.sandboxId,
        parent_snapshot_id: s.parentSnapshotId, size_bytes: s.sizeBytes, created_at: s.createdAt, cpu_count: s.cpuCount, memory_mb: s.memoryMB,
        disk_size_mb: s.diskSizeMB, rootfs_dir: s.rootfsDir, envs: envsColumn(s.envs), egress: egressColumn(s.egress), ingress: ingressColumn(s.ingress),
        auto_pause: autoPauseColumn(s.autoPause), networks: networksColumn(s.networks), host_id: s.hostId,
      })
      .execute();
  } catch (err) {
    conflictOnConstraint(err, s.name ? `a snapshot named '${s.name}' already exists` : `snapshot '${s.id}' already exists`);
  }
}

export async function getSnapshot(db: Executor, id: string): Promise<SnapshotRecord | null> {
  const row = await db.selectFrom('snapshots').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? snapshotFromRow(row) : null;
}

export async function snapshotByName(db: Executor, name: string, teamId: string): Promise<SnapshotRecord | null> {
  const row = await db.selectFrom('snapshots').selectAll().where('team_id', '=', teamId).where('name', '=', name).executeTakeFirst();
  return row ? snapshotFromRow(row) : null;
}

/** @throws RamifyError `SNAPSHOT_NOT_FOUND`, `CONFLICT` (the new name is taken). */
export async function updateSnapshot(db: Executor, id: string, patch: SnapshotPatch): Promise<SnapshotRecord> {
  const set: Partial<SnapshotRow> = {};
  if (patch.name !== undefined) set.name = patch.name;
  if (patch.kind !== undefined) set.kind = patch.kind;
  if (patch.status !== undefined) set.status = patch.status;
  if (patch.sizeBytes !== undefined) set.size_bytes = patch.sizeBytes;
  if (patch.templateId !== undefined) set.template_id = patch.templateId;
  if (patch.envs !== undefined) set.envs = envsColumn(patch.envs);
  if (patch.egress !== undefined) set.egress = egressColumn(patch.egress);
  if (patch.ingress !== undefined) set.ingress = ingressColumn(patch.ingress);
  if (patch.autoPause !== undefined) set.auto_pause = autoPauseColumn(patch.autoPause);
  if (patch.networks !== undefined) set.networks = networksColumn(patch.networks);
  if (Object.keys(set).length > 0) {
    let changed: bigint;
    try {
      changed = (await db.updateTable('snapshots').set(set).where('id', '=', id).executeTakeFirst()).numUpdatedRows;
    } catch (err) {
      conflictOnConstraint(err, `a snapshot named '${patch.name}' already exists`);
    }
    if (changed === 0n) throw notFound('SNAPSHOT_NOT_FOUND', 'snapshot', id, { id });
  }
  const updated = await getSnapshot(db, id);
  if (!updated) throw notFound('SNAPSHOT_NOT_FOUND', 'snapshot', id, { id });
  return updated;
}

/** Newest first. */
export async function listSnapshots(db: Executor, filter: { sandboxId?: string; kinds?: SnapshotRecord['kind'][] } = {}): Promise<SnapshotRecord[]> {
  let q = db.selectFrom('snapshots').selectAll();
  if (filter.sandboxId !== undefined) q = q.where('sandbox_id', '=', filter.sandboxId);
  if (filter.kinds && filter.kinds.length > 0) q = q.where('kind', 'in', filter.kinds);
  return (await q.orderBy('created_at', 'desc').orderBy('id', 'desc').execute()).map(snapshotFromRow);
}

export async function deleteSnapshot(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('snapshots').where('id', '=', id).execute();
}

/** `images`: JSON `[{ runtime, snapshotId }]` (migration 5); `envs`: JSON object (migration 7; `{}` before it). */
type TemplateRow = Selectable<TemplatesTable>;

/** A record's images, the default one (`runtime`/`snapshotId`) first and present exactly once. */
function templateImages(t: TemplateRecord): TemplateRecord['images'] {
  const others = t.images.filter((i) => i.runtime !== t.runtime);
  return [{ runtime: t.runtime, snapshotId: t.snapshotId }, ...others];
}

const templateFromRow = (r: TemplateRow): TemplateRecord => ({
  id: r.id,
  teamId: r.team_id,
  name: r.name,
  runtime: r.runtime as TemplateRecord['runtime'],
  specHash: r.spec_hash,
  snapshotId: r.snapshot_id,
  parent: r.parent,
  sizeBytes: r.size_bytes,
  rootfsDir: r.rootfs_dir,
  createdAt: r.created_at,
  images: JSON.parse(r.images) as TemplateRecord['images'],
  envs: JSON.parse(r.envs) as TemplateRecord['envs'],
});

/** Insert or replace by id. @throws RamifyError `CONFLICT` when another template of the team has the name. */
export async function putTemplate(db: Executor, t: TemplateRecord): Promise<void> {
  const row = {
    id: t.id, team_id: t.teamId, name: t.name, runtime: t.runtime, spec_hash: t.specHash, snapshot_id: t.snapshotId, parent: t.parent, size_bytes: t.sizeBytes,
    rootfs_dir: t.rootfsDir, created_at: t.createdAt, images: JSON.stringify(templateImages(t)), envs: JSON.stringify(t.envs),
  };
  const { id: _id, team_id: _team, ...replaced } = row;
  try {
    await db.insertInto('templates').values(row).onConflict((oc) => oc.column('id').doUpdateSet(replaced)).execute();
  } catch (err) {
    conflictOnConstraint(err, `a template named '${t.name}' already exists`);
  }
}

export async function getTemplate(db: Executor, id: string): Promise<TemplateRecord | null> {
  const row = await db.selectFrom('templates').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? templateFromRow(row) : null;
}

export async function templateByName(db: Executor, name: string, teamId: string): Promise<TemplateRecord | null> {
  const row = await db.selectFrom('templates').selectAll().where('team_id', '=', teamId).where('name', '=', name).executeTakeFirst();
  return row ? templateFromRow(row) : null;
}

export async function listTemplates(db: Executor): Promise<TemplateRecord[]> {
  return (await db.selectFrom('templates').selectAll().orderBy('name').orderBy('team_id').execute()).map(templateFromRow);
}

export async function deleteTemplate(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('templates').where('id', '=', id).execute();
}

/**
 * Ids of templates built on a snapshot (as their default image or any runtime's image). The images JSON
 * is matched roughly in SQL (LIKE, the same on both databases) and exactly here.
 */
export async function templatesUsingSnapshot(db: Executor, snapshotId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('templates')
    .select(['id', 'snapshot_id', 'images'])
    .where((eb) => eb.or([eb('snapshot_id', '=', snapshotId), eb('images', 'like', `%${JSON.stringify(snapshotId)}%`)]))
    .orderBy('id')
    .execute();
  const uses = (r: (typeof rows)[number]): boolean =>
    r.snapshot_id === snapshotId || (JSON.parse(r.images) as TemplateRecord['images']).some((i) => i.snapshotId === snapshotId);
  return rows.filter(uses).map((r) => r.id);
}
