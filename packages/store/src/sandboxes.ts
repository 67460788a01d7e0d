/**
 * Sandbox rows: mapping, insert, patch, filtered and paginated listing. Metadata lives both in the row
 * (JSON, returned as is) and in `sandbox_metadata` (one row per pair, for filters).
 */
import { RamifyError } from '@ramify/contracts';
import type { SandboxState } from '@ramify/contracts';
import type { SandboxActivityRecord, SandboxPage, SandboxPatch, SandboxQuery, SandboxRecord } from '@ramify/core';
import { conflictOnConstraint, requireRootfs, type Db } from './db.js';

interface SandboxRow {
  id: string;
  /** Migration 17 ('default' for rows from before it). */
  team_id: string;
  state: string;
  runtime: string;
  template_id: string;
  source_snapshot_id: string | null;
  rootfs_dir: string;
  parent_id: string | null;
  cpu_count: number;
  memory_mb: number;
  disk_size_mb: number | null;
  metadata: string;
  envs: string;
  created_at: number;
  timeout_ms: number;
  on_timeout: string;
  end_at: number | null;
  slot: number | null;
  paused_snapshot_id: string | null;
  error: string | null;
  operation: string | null;
  /** JSON `{ ports, autoResume }` (migration 11). */
  ingress: string;
  /** JSON `{ idleMs }` or NULL (migration 12). */
  auto_pause: string | null;
  /** ms, or NULL (migration 14). */
  last_active_at: number | null;
  /** Migration 26; NULL until adopted. */
  host_id: string | null;
}

const COLUMNS: Record<keyof Omit<SandboxRecord, 'id'>, keyof SandboxRow> = {
  teamId: 'team_id',
  state: 'state',
  runtime: 'runtime',
  templateId: 'template_id',
  sourceSnapshotId: 'source_snapshot_id',
  rootfsDir: 'rootfs_dir',
  parentId: 'parent_id',
  cpuCount: 'cpu_count',
  memoryMB: 'memory_mb',
  diskSizeMB: 'disk_size_mb',
  metadata: 'metadata',
  envs: 'envs',
  createdAt: 'created_at',
  timeoutMs: 'timeout_ms',
  onTimeout: 'on_timeout',
  endAt: 'end_at',
  slot: 'slot',
  pausedSnapshotId: 'paused_snapshot_id',
  error: 'error',
  operation: 'operation',
  ingress: 'ingress',
  autoPause: 'auto_pause',
  lastActiveAt: 'last_active_at',
  hostId: 'host_id',
};
const JSON_FIELDS = new Set(['metadata', 'envs', 'operation', 'ingress', 'autoPause']);

function fromRow(row: SandboxRow): SandboxRecord {
  return {
    id: row.id,
    teamId: row.team_id,
    state: row.state as SandboxRecord['state'],
    runtime: row.runtime as SandboxRecord['runtime'],
    templateId: row.template_id,
    sourceSnapshotId: row.source_snapshot_id,
    rootfsDir: row.rootfs_dir,
    parentId: row.parent_id,
    cpuCount: row.cpu_count,
    memoryMB: row.memory_mb,
    diskSizeMB: row.disk_size_mb,
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    envs: JSON.parse(row.envs) as Record<string, string>,
    createdAt: row.created_at,
    timeoutMs: row.timeout_ms,
    onTimeout: row.on_timeout as SandboxRecord['onTimeout'],
    endAt: row.end_at,
    slot: row.slot,
    pausedSnapshotId: row.paused_snapshot_id,
    error: row.error,
    operation: row.operation === null ? null : (JSON.parse(row.operation) as SandboxRecord['operation']),
    ingress: JSON.parse(row.ingress) as SandboxRecord['ingress'],
    autoPause: row.auto_pause === null ? null : (JSON.parse(row.auto_pause) as SandboxRecord['autoPause']),
    lastActiveAt: row.last_active_at,
    hostId: row.host_id,
  };
}

function toColumnValue(field: string, value: unknown): unknown {
  if (JSON_FIELDS.has(field)) return value === null ? null : JSON.stringify(value);
  return value;
}

export class SandboxRows {
  readonly #db: Db;
  readonly #get;
  readonly #insertMeta;
  readonly #deleteMeta;

  constructor(db: Db) {
    this.#db = db;
    this.#get = db.prepare('SELECT * FROM sandboxes WHERE id = ?');
    this.#insertMeta = db.prepare('INSERT INTO sandbox_metadata (sandbox_id, key, value) VALUES (?, ?, ?)');
    this.#deleteMeta = db.prepare('DELETE FROM sandbox_metadata WHERE sandbox_id = ?');
  }

  get(id: string): SandboxRecord | null {
    const row = this.#get.get(id) as SandboxRow | undefined;
    return row ? fromRow(row) : null;
  }

  /** @throws RamifyError `CONFLICT` (id taken), `INTERNAL` (no root filesystem given). */
  insert(record: SandboxRecord): void {
    requireRootfs(record.rootfsDir, `sandbox '${record.id}'`);
    const fields = ['id', ...Object.keys(COLUMNS)] as Array<keyof SandboxRecord>;
    const columns = fields.map((f) => (f === 'id' ? 'id' : COLUMNS[f]));
    const sql = `INSERT INTO sandboxes (${columns.join(', ')}, updated_at) VALUES (${columns.map(() => '?').join(', ')}, ?)`;
    const values = fields.map((f) => toColumnValue(f, record[f]));
    try {
      this.#db.transaction(() => {
        this.#db.prepare(sql).run(...values, Date.now());
        for (const [key, value] of Object.entries(record.metadata)) this.#insertMeta.run(record.id, key, value);
      })();
    } catch (err) {
      conflictOnConstraint(err, `sandbox '${record.id}' already exists`);
    }
  }

  update(id: string, patch: SandboxPatch): SandboxRecord {
    // `autoPause: null` (off) is a value to store; other fields are left alone when undefined.
    const fields = (Object.keys(patch) as Array<keyof SandboxPatch>).filter((f) => patch[f] !== undefined && f in COLUMNS);
    return this.#db.transaction(() => {
      if (fields.length > 0) {
        const sets = fields.map((f) => `${COLUMNS[f]} = ?`).join(', ');
        const result = this.#db
          .prepare(`UPDATE sandboxes SET ${sets}, updated_at = ? WHERE id = ?`)
          .run(...fields.map((f) => toColumnValue(f, patch[f])), Date.now(), id);
        if (result.changes === 0) throw new RamifyError('SANDBOX_NOT_FOUND', `sandbox '${id}' not found`, { id });
        if (patch.metadata) {
          this.#deleteMeta.run(id);
          for (const [key, value] of Object.entries(patch.metadata)) this.#insertMeta.run(id, key, value);
        }
      }
      const updated = this.get(id);
      if (!updated) throw new RamifyError('SANDBOX_NOT_FOUND', `sandbox '${id}' not found`, { id });
      return updated;
    })();
  }

  /** Each sandbox's `last_active_at` raised to `at` (never lowered), in one transaction; unknown ids are skipped. */
  recordActivity(entries: readonly SandboxActivityRecord[]): void {
    const raise = this.#db.prepare('UPDATE sandboxes SET last_active_at = MAX(COALESCE(last_active_at, 0), ?) WHERE id = ?');
    this.#db.transaction(() => {
      for (const e of entries) raise.run(e.at, e.sandboxId);
    })();
  }

  list(query: SandboxQuery): SandboxPage {
    const limit = Math.min(Math.max(query.limit ?? 100, 1), 1000);
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.teamId !== undefined) {
      where.push('s.team_id = ?');
      params.push(query.teamId);
    }
    if (query.states && query.states.length > 0) {
      where.push(`s.state IN (${query.states.map(() => '?').join(', ')})`);
      params.push(...query.states);
    }
    if (query.endAtOrBefore !== undefined) {
      where.push('s.end_at IS NOT NULL AND s.end_at <= ?');
      params.push(query.endAtOrBefore);
    }
    if (query.withOperation) where.push('s.operation IS NOT NULL');
    if (query.hostId !== undefined) {
      where.push('s.host_id = ?');
      params.push(query.hostId);
    }
    for (const [key, value] of Object.entries(query.metadata ?? {})) {
      where.push('EXISTS (SELECT 1 FROM sandbox_metadata m WHERE m.sandbox_id = s.id AND m.key = ? AND m.value = ?)');
      params.push(key, value);
    }
    if (query.cursor !== undefined) {
      where.push('s.id > ?');
      params.push(decodeCursor(query.cursor));
    }
    const sql = `SELECT s.* FROM sandboxes s ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY s.id LIMIT ?`;
    const rows = this.#db.prepare(sql).all(...params, limit + 1) as SandboxRow[];
    const page = rows.slice(0, limit).map(fromRow);
    const last = page[page.length - 1];
    return { sandboxes: page, nextCursor: rows.length > limit && last ? encodeCursor(last.id) : null };
  }

  /**
   * The team's sandboxes in one of `states`, and its paused ones inside a fork or snapshot of a running
   * sandbox (they are back in a moment): what its quota counts.
   */
  resourceHolders(teamId: string, states: readonly SandboxState[]): Array<{ id: string; memoryMB: number }> {
    const sql = `SELECT id, memory_mb FROM sandboxes WHERE team_id = ? AND (state IN (${states.map(() => '?').join(', ') || "''"})
      OR (state = 'paused' AND operation IS NOT NULL AND json_extract(operation, '$.parentWasRunning') = 1)) ORDER BY id`;
    return (this.#db.prepare(sql).all(teamId, ...states) as Array<{ id: string; memory_mb: number }>).map((r) => ({ id: r.id, memoryMB: r.memory_mb }));
  }

  /** The sandbox and its descendants (recursively, by `parent_id`), parents before children. */
  subtree(rootId: string): SandboxRecord[] {
    const rows = this.#db
      .prepare(
        `WITH RECURSIVE sub(id, depth) AS (SELECT id, 0 FROM sandboxes WHERE id = ?
           UNION ALL SELECT s.id, sub.depth + 1 FROM sandboxes s JOIN sub ON s.parent_id = sub.id)
         SELECT s.* FROM sandboxes s JOIN sub ON s.id = sub.id ORDER BY sub.depth, s.id`,
      )
      .all(rootId) as SandboxRow[];
    return rows.map(fromRow);
  }

  /** Each given sandbox's root: the ancestor without a parent (itself when it has none). */
  roots(ids: readonly string[]): Map<string, string> {
    if (ids.length === 0) return new Map();
    const rows = this.#db
      .prepare(
        `WITH RECURSIVE up(id, cur, parent) AS (
           SELECT id, id, parent_id FROM sandboxes WHERE id IN (${ids.map(() => '?').join(', ')})
           UNION ALL SELECT up.id, p.id, p.parent_id FROM up JOIN sandboxes p ON p.id = up.parent)
         SELECT id, cur AS root FROM up WHERE parent IS NULL`,
      )
      .all(...ids) as Array<{ id: string; root: string }>;
    return new Map(rows.map((r) => [r.id, r.root]));
  }

  /** Non-killed sandboxes that reference a snapshot. */
  references(snapshotId: string): { pausedBy: string[]; sourceOf: string[] } {
    const ids = (column: string): string[] =>
      (this.#db.prepare(`SELECT id FROM sandboxes WHERE ${column} = ? AND state <> 'killed' ORDER BY id`).all(snapshotId) as Array<{ id: string }>).map((r) => r.id);
    return { pausedBy: ids('paused_snapshot_id'), sourceOf: ids('source_snapshot_id') };
  }
}

function encodeCursor(lastId: string): string {
  return Buffer.from(JSON.stringify({ after: lastId }), 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): string {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after?: unknown };
    if (typeof parsed.after === 'string') return parsed.after;
  } catch {
    /* fall through */
  }
  throw new RamifyError('VALIDATION_FAILED', 'nextToken is not a token this API issued', { field: 'nextToken' });
}
