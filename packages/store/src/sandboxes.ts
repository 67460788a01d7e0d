/**
 * Sandbox rows: mapping, insert, patch, filtered and paginated listing. Metadata lives both in the row
 * (JSON, returned as is) and in `sandbox_metadata` (one row per pair, for filters).
 */
import { RamifyError, invalidField, notFound, quote } from '@ramify/contracts';
import type { SandboxState } from '@ramify/contracts';
import type { SandboxActivityRecord, SandboxPage, SandboxPatch, SandboxQuery, SandboxRecord } from '@ramify/core';
import { sql, type Selectable } from 'kysely';
import { requireRootfs } from './db.js';
import { conflictOnConstraint } from './errors.js';
import { insertRows, selectById, updateById } from './prepared.js';
import { inTransaction, type Executor, type SandboxesTable } from './schema.js';

/** Columns of migrations 1-26 (`team_id`: 17; JSON `ingress`: 11; `auto_pause`: 12; `last_active_at`: 14; `host_id`: 26). */
type SandboxRow = Omit<Selectable<SandboxesTable>, 'updated_at' | 'ingress_wakeups' | 'last_wake_at'>;

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

/** Column → value of the record's fields named (`id` and every mapped field). */
function columnValues(source: Partial<SandboxRecord>, fields: ReadonlyArray<keyof SandboxRecord>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) out[f === 'id' ? 'id' : COLUMNS[f as keyof typeof COLUMNS]] = toColumnValue(f, source[f]);
  return out;
}

export async function getSandbox(db: Executor, id: string): Promise<SandboxRecord | null> {
  const row = await selectById<SandboxRow>(db, 'sandboxes', 'id', id);
  return row ? fromRow(row) : null;
}

/** The row and its metadata pairs, atomically. @throws RamifyError `CONFLICT` (id taken), `INTERNAL` (no root filesystem given). */
export async function insertSandbox(db: Executor, record: SandboxRecord): Promise<void> {
  requireRootfs(record.rootfsDir, `sandbox '${record.id}'`);
  const values = { ...columnValues(record, ['id', ...(Object.keys(COLUMNS) as Array<keyof SandboxRecord>)]), updated_at: Date.now() };
  try {
    // One statement needs no transaction of its own; with metadata rows, one transaction.
    if (Object.keys(record.metadata).length === 0) await insertRows(db, 'sandboxes', [values]);
    else {
      await inTransaction(db, async (trx) => {
        await insertRows(trx, 'sandboxes', [values]);
        await insertMetadata(trx, record.id, record.metadata);
      });
    }
  } catch (err) {
    conflictOnConstraint(err, `sandbox '${record.id}' already exists`);
  }
}

async function insertMetadata(db: Executor, sandboxId: string, metadata: Record<string, string>): Promise<void> {
  const rows = Object.entries(metadata).map(([key, value]) => ({ sandbox_id: sandboxId, key, value }));
  if (rows.length > 0) await insertRows(db, 'sandbox_metadata', rows);
}

/**
 * Apply the patch atomically: one UPDATE ... RETURNING (in a transaction with the metadata rows when the
 * patch has metadata; in the caller's when `db` is one). @throws RamifyError `SANDBOX_NOT_FOUND`.
 */
export async function updateSandbox(db: Executor, id: string, patch: SandboxPatch): Promise<SandboxRecord> {
  // `autoPause: null` (off) is a value to store; other fields are left alone when undefined.
  const fields = (Object.keys(patch) as Array<keyof SandboxPatch>).filter((f) => patch[f] !== undefined && f in COLUMNS);
  const missing = (): RamifyError => notFound('SANDBOX_NOT_FOUND', 'sandbox', id, { id });
  if (fields.length === 0) {
    const current = await getSandbox(db, id);
    if (!current) throw missing();
    return current;
  }
  const write = async (trx: Executor): Promise<SandboxRecord> => {
    const row = await updateById<SandboxRow>(trx, 'sandboxes', { ...columnValues(patch, fields), updated_at: Date.now() }, 'id', id);
    if (!row) throw missing();
    if (patch.metadata) {
      await trx.deleteFrom('sandbox_metadata').where('sandbox_id', '=', id).execute();
      await insertMetadata(trx, id, patch.metadata);
    }
    return fromRow(row);
  };
  return patch.metadata ? inTransaction(db, write) : write(db);
}

/** Each sandbox's `last_active_at` raised to `at` (never lowered), in one transaction; unknown ids are skipped. */
export async function recordActivity(db: Executor, entries: readonly SandboxActivityRecord[]): Promise<void> {
  if (entries.length === 0) return;
  await inTransaction(db, async (trx) => {
    for (const e of entries) {
      await trx
        .updateTable('sandboxes')
        .set({ last_active_at: e.at })
        .where('id', '=', e.sandboxId)
        .where((eb) => eb.or([eb('last_active_at', 'is', null), eb('last_active_at', '<', e.at)]))
        .execute();
    }
  });
}

export async function listSandboxes(db: Executor, query: SandboxQuery): Promise<SandboxPage> {
  const limit = Math.min(Math.max(query.limit ?? 100, 1), 1000);
  let q = db.selectFrom('sandboxes as s').selectAll('s');
  if (query.teamId !== undefined) q = q.where('s.team_id', '=', query.teamId);
  if (query.states && query.states.length > 0) q = q.where('s.state', 'in', query.states);
  if (query.endAtOrBefore !== undefined) q = q.where('s.end_at', 'is not', null).where('s.end_at', '<=', query.endAtOrBefore);
  if (query.withOperation) q = q.where('s.operation', 'is not', null);
  if (query.hostId !== undefined) q = q.where('s.host_id', '=', query.hostId);
  for (const [key, value] of Object.entries(query.metadata ?? {})) {
    q = q.where(({ exists, selectFrom }) =>
      exists(selectFrom('sandbox_metadata as m').select('m.key').whereRef('m.sandbox_id', '=', 's.id').where('m.key', '=', key).where('m.value', '=', value)),
    );
  }
  if (query.cursor !== undefined) {
    const after = decodeCursor(query.cursor);
    // A cursor of an earlier daemon names only the id: its sandbox's creation time (0 when it is gone).
    const at = after.at ?? Number((await db.selectFrom('sandboxes').select('created_at').where('id', '=', after.id).executeTakeFirst())?.created_at ?? 0);
    q = q.where((eb) => eb.or([eb('s.created_at', '>', at), eb.and([eb('s.created_at', '=', at), eb('s.id', '>', after.id)])]));
  }
  // Creation order, not id order: a sandbox claimed from the warm pool got its id when it was restored,
  // ahead of its creation (docs/design/POOL.md); ids break ties (a fork's children share a millisecond).
  const rows = await q.orderBy('s.created_at').orderBy('s.id').limit(limit + 1).execute();
  const page = rows.slice(0, limit).map(fromRow);
  const last = page[page.length - 1];
  return { sandboxes: page, nextCursor: rows.length > limit && last ? encodeCursor(last) : null };
}

/**
 * The team's sandboxes in one of `states`, and its paused ones inside a fork or snapshot of a running
 * sandbox (they are back in a moment): what its quota counts. The operation's JSON is read here, not in
 * SQL, so that the query is the same on both databases.
 */
export async function resourceHolders(db: Executor, teamId: string, states: readonly SandboxState[]): Promise<Array<{ id: string; memoryMB: number }>> {
  const rows = await db
    .selectFrom('sandboxes')
    .select(['id', 'state', 'memory_mb', 'operation'])
    .where('team_id', '=', teamId)
    .where((eb) => eb.or([...(states.length > 0 ? [eb('state', 'in', states)] : []), eb.and([eb('state', '=', 'paused'), eb('operation', 'is not', null)])]))
    .orderBy('id')
    .execute();
  const holds = (r: (typeof rows)[number]): boolean =>
    (states as readonly string[]).includes(r.state) || (r.operation !== null && (JSON.parse(r.operation) as { parentWasRunning?: unknown }).parentWasRunning === true);
  return rows.filter(holds).map((r) => ({ id: r.id, memoryMB: r.memory_mb }));
}

/** The sandbox and its descendants (recursively, by `parent_id`), parents before children. */
export async function subtree(db: Executor, rootId: string): Promise<SandboxRecord[]> {
  const rows = await db
    .withRecursive('sub(id, depth)', (qb) =>
      qb
        .selectFrom('sandboxes')
        .select(['id', sql<number>`0`.as('depth')])
        .where('id', '=', rootId)
        .unionAll(qb.selectFrom('sandboxes as c').innerJoin('sub', 'sub.id', 'c.parent_id').select(['c.id', sql<number>`sub.depth + 1`.as('depth')])),
    )
    .selectFrom('sandboxes as s')
    .innerJoin('sub', 'sub.id', 's.id')
    .selectAll('s')
    .orderBy('sub.depth')
    .orderBy('s.id')
    .execute();
  return rows.map(fromRow);
}

/** Each given sandbox's root: the ancestor without a parent (itself when it has none). */
export async function roots(db: Executor, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .withRecursive('up(id, cur, parent)', (qb) =>
      qb
        .selectFrom('sandboxes')
        .select(['id', 'id as cur', 'parent_id as parent'])
        .where('id', 'in', ids)
        .unionAll(qb.selectFrom('up').innerJoin('sandboxes as p', 'p.id', 'up.parent').select(['up.id', 'p.id as cur', 'p.parent_id as parent'])),
    )
    .selectFrom('up')
    .select(['id', 'cur as root'])
    .where('parent', 'is', null)
    .execute();
  return new Map(rows.map((r) => [r.id, r.root]));
}

/** Non-killed sandboxes that reference a snapshot. */
export async function references(db: Executor, snapshotId: string): Promise<{ pausedBy: string[]; sourceOf: string[] }> {
  const ids = async (column: 'paused_snapshot_id' | 'source_snapshot_id'): Promise<string[]> =>
    (await db.selectFrom('sandboxes').select('id').where(column, '=', snapshotId).where('state', '<>', 'killed').orderBy('id').execute()).map((r) => r.id);
  return { pausedBy: await ids('paused_snapshot_id'), sourceOf: await ids('source_snapshot_id') };
}

/** The page's last sandbox, as the next page's keyset: its creation time and id. */
function encodeCursor(last: SandboxRecord): string {
  return Buffer.from(JSON.stringify({ after: last.id, at: last.createdAt }), 'utf8').toString('base64url');
}

/**
 * @throws RamifyError `VALIDATION_FAILED` for a cursor this API did not issue, naming `query.nextToken` (the
 *   query parameter it comes from, `details.issues` as a schema's: contracts/src/issue-messages.ts).
 */
function decodeCursor(cursor: string): { id: string; at: number | null } {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after?: unknown; at?: unknown };
    if (typeof parsed.after === 'string') return { id: parsed.after, at: typeof parsed.at === 'number' && Number.isSafeInteger(parsed.at) ? parsed.at : null };
  } catch {
    /* fall through */
  }
  throw invalidField('query.nextToken', `must be the nextToken of a previous page, as given, got ${quote(cursor)}`, { field: 'nextToken' });
}
