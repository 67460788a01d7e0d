/**
 * Snapshot and template rows. Both belong to a team (migration 17); names are unique per team.
 */
import { RamifyError, type AutoPause, type SnapshotNetworks } from '@ramify/contracts';
import type { CanonicalEgressPolicy, SandboxIngress, SnapshotPatch, SnapshotRecord, TemplateRecord } from '@ramify/core';
import { conflictOnConstraint, requireRootfs, type Db } from './db.js';

interface SnapshotRow {
  id: string;
  team_id: string;
  name: string | null;
  kind: string;
  status: string;
  runtime: string;
  template_id: string;
  sandbox_id: string | null;
  parent_snapshot_id: string | null;
  size_bytes: number;
  created_at: number;
  cpu_count: number;
  memory_mb: number;
  disk_size_mb: number | null;
  rootfs_dir: string;
  /** JSON object of its sandbox's environment variables; NULL for template images and rows before migration 8. */
  envs: string | null;
  /** JSON `{ mode, rules }` of its sandbox's egress policy (migration 10); NULL for template images and orphaned old rows. */
  egress: string | null;
  /** JSON `{ ports, autoResume }` of its sandbox's ingress (migration 11); NULL when none is recorded. */
  ingress: string | null;
  /** JSON `{ idleMs }` of its sandbox's idle auto-pause (migration 13); NULL when off or not recorded. */
  auto_pause: string | null;
  /** JSON `[{ network, alias }]` of the private networks its sandbox was on (migration 17); NULL when not recorded. */
  networks: string | null;
  /** The host holding the image locally (migration 26); NULL until adopted. */
  host_id: string | null;
}

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

export class SnapshotRows {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  /** @throws RamifyError `CONFLICT` (id or name taken), `INTERNAL` (no root filesystem given). */
  insert(s: SnapshotRecord): void {
    requireRootfs(s.rootfsDir, `snapshot '${s.id}'`);
    try {
      this.#db
        .prepare(
          `INSERT INTO snapshots (id, team_id, name, kind, status, runtime, template_id, sandbox_id, parent_snapshot_id, size_bytes, created_at, cpu_count, memory_mb, disk_size_mb, rootfs_dir,
             envs, egress, ingress, auto_pause, networks, host_id)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          s.id, s.teamId, s.name, s.kind, s.status, s.runtime, s.templateId, s.sandboxId, s.parentSnapshotId, s.sizeBytes, s.createdAt, s.cpuCount, s.memoryMB, s.diskSizeMB, s.rootfsDir,
          envsColumn(s.envs), egressColumn(s.egress), ingressColumn(s.ingress), autoPauseColumn(s.autoPause), networksColumn(s.networks), s.hostId,
        );
    } catch (err) {
      conflictOnConstraint(err, s.name ? `a snapshot named '${s.name}' already exists` : `snapshot '${s.id}' already exists`);
    }
  }

  get(id: string): SnapshotRecord | null {
    const row = this.#db.prepare('SELECT * FROM snapshots WHERE id = ?').get(id) as SnapshotRow | undefined;
    return row ? snapshotFromRow(row) : null;
  }

  byName(name: string, teamId: string): SnapshotRecord | null {
    const row = this.#db.prepare('SELECT * FROM snapshots WHERE team_id = ? AND name = ?').get(teamId, name) as SnapshotRow | undefined;
    return row ? snapshotFromRow(row) : null;
  }

  update(id: string, patch: SnapshotPatch): SnapshotRecord {
    const columns: Record<string, string> = {
      name: 'name', kind: 'kind', status: 'status', sizeBytes: 'size_bytes', envs: 'envs', egress: 'egress', ingress: 'ingress', autoPause: 'auto_pause', networks: 'networks',
    };
    const fields = Object.keys(patch).filter((f) => f in columns && patch[f as keyof typeof patch] !== undefined);
    const jsonColumns: Record<string, () => string | null> = {
      envs: () => envsColumn(patch.envs ?? null),
      egress: () => egressColumn(patch.egress ?? null),
      ingress: () => ingressColumn(patch.ingress ?? null),
      autoPause: () => autoPauseColumn(patch.autoPause ?? null),
      networks: () => networksColumn(patch.networks ?? null),
    };
    const value = (f: string): unknown => (jsonColumns[f] ? jsonColumns[f]() : patch[f as keyof typeof patch]);
    if (fields.length > 0) {
      try {
        const result = this.#db
          .prepare(`UPDATE snapshots SET ${fields.map((f) => `${columns[f]} = ?`).join(', ')} WHERE id = ?`)
          .run(...fields.map(value), id);
        if (result.changes === 0) throw new RamifyError('SNAPSHOT_NOT_FOUND', `snapshot '${id}' not found`, { id });
      } catch (err) {
        conflictOnConstraint(err, `a snapshot named '${patch.name}' already exists`);
      }
    }
    const updated = this.get(id);
    if (!updated) throw new RamifyError('SNAPSHOT_NOT_FOUND', `snapshot '${id}' not found`, { id });
    return updated;
  }

  list(filter: { sandboxId?: string; kinds?: SnapshotRecord['kind'][] } = {}): SnapshotRecord[] {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.sandboxId !== undefined) {
      where.push('sandbox_id = ?');
      params.push(filter.sandboxId);
    }
    if (filter.kinds && filter.kinds.length > 0) {
      where.push(`kind IN (${filter.kinds.map(() => '?').join(', ')})`);
      params.push(...filter.kinds);
    }
    const sql = `SELECT * FROM snapshots ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id DESC`;
    return (this.#db.prepare(sql).all(...params) as SnapshotRow[]).map(snapshotFromRow);
  }

  delete(id: string): void {
    this.#db.prepare('DELETE FROM snapshots WHERE id = ?').run(id);
  }
}

interface TemplateRow {
  id: string;
  team_id: string;
  name: string;
  runtime: string;
  spec_hash: string;
  snapshot_id: string;
  parent: string | null;
  size_bytes: number;
  rootfs_dir: string;
  created_at: number;
  /** JSON array of `{ runtime, snapshotId }` (migration 5). */
  images: string;
  /** JSON object of environment variables (migration 7; `{}` for templates built before it). */
  envs: string;
}

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

export class TemplateRows {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  put(t: TemplateRecord): void {
    try {
      this.#db
        .prepare(
          `INSERT INTO templates (id, team_id, name, runtime, spec_hash, snapshot_id, parent, size_bytes, rootfs_dir, created_at, images, envs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT(id) DO UPDATE SET name = excluded.name, runtime = excluded.runtime, spec_hash = excluded.spec_hash, snapshot_id = excluded.snapshot_id,
             parent = excluded.parent, size_bytes = excluded.size_bytes, rootfs_dir = excluded.rootfs_dir, created_at = excluded.created_at, images = excluded.images,
             envs = excluded.envs`,
        )
        .run(t.id, t.teamId, t.name, t.runtime, t.specHash, t.snapshotId, t.parent, t.sizeBytes, t.rootfsDir, t.createdAt, JSON.stringify(templateImages(t)), JSON.stringify(t.envs));
    } catch (err) {
      conflictOnConstraint(err, `a template named '${t.name}' already exists`);
    }
  }

  get(id: string): TemplateRecord | null {
    const row = this.#db.prepare('SELECT * FROM templates WHERE id = ?').get(id) as TemplateRow | undefined;
    return row ? templateFromRow(row) : null;
  }

  byName(name: string, teamId: string): TemplateRecord | null {
    const row = this.#db.prepare('SELECT * FROM templates WHERE team_id = ? AND name = ?').get(teamId, name) as TemplateRow | undefined;
    return row ? templateFromRow(row) : null;
  }

  list(): TemplateRecord[] {
    return (this.#db.prepare('SELECT * FROM templates ORDER BY name, team_id').all() as TemplateRow[]).map(templateFromRow);
  }

  delete(id: string): void {
    this.#db.prepare('DELETE FROM templates WHERE id = ?').run(id);
  }

  /** Ids of templates built on a snapshot (as their default image or any runtime's image). */
  usingSnapshot(snapshotId: string): string[] {
    const rows = this.#db
      .prepare(
        `SELECT id FROM templates WHERE snapshot_id = ?
           OR EXISTS (SELECT 1 FROM json_each(templates.images) WHERE json_extract(json_each.value, '$.snapshotId') = ?)
         ORDER BY id`,
      )
      .all(snapshotId, snapshotId) as Array<{ id: string }>;
    return rows.map((r) => r.id);
  }
}
