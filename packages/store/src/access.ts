/**
 * API key (each a team's, migration 17), audit log and slot lease rows.
 */
import { RamifyError } from '@ramify/contracts';
import type { ApiKeyRecord, AuditQuery, AuditRecord, SlotLease } from '@ramify/core';
import { conflictOnConstraint, type Db } from './db.js';

interface ApiKeyRow {
  id: string;
  team_id: string;
  role: string;
  name: string;
  hash: string;
  prefix: string;
  created_at: number;
  last_used_at: number | null;
  expires_at: number | null;
  revoked_at: number | null;
}

const keyFromRow = (r: ApiKeyRow): ApiKeyRecord => ({
  id: r.id,
  teamId: r.team_id,
  role: r.role as ApiKeyRecord['role'],
  name: r.name,
  hash: r.hash,
  prefix: r.prefix,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
});

export class ApiKeyRows {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }
  insert(k: ApiKeyRecord): void {
    try {
      this.#db
        .prepare('INSERT INTO api_keys (id, team_id, role, name, hash, prefix, created_at, last_used_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
        .run(k.id, k.teamId, k.role, k.name, k.hash, k.prefix, k.createdAt, k.lastUsedAt, k.expiresAt, k.revokedAt);
    } catch (err) {
      if ((err as { code?: unknown }).code === 'SQLITE_CONSTRAINT_FOREIGNKEY') throw new RamifyError('TEAM_NOT_FOUND', `team '${k.teamId}' not found`, { id: k.teamId });
      conflictOnConstraint(err, `API key '${k.id}' already exists`);
    }
  }
  byHash(hash: string): ApiKeyRecord | null {
    const row = this.#db.prepare('SELECT * FROM api_keys WHERE hash = ? AND revoked_at IS NULL').get(hash) as ApiKeyRow | undefined;
    return row ? keyFromRow(row) : null;
  }
  get(id: string): ApiKeyRecord | null {
    const row = this.#db.prepare('SELECT * FROM api_keys WHERE id = ?').get(id) as ApiKeyRow | undefined;
    return row ? keyFromRow(row) : null;
  }
  list(filter: { teamId?: string } = {}): ApiKeyRecord[] {
    const rows = filter.teamId === undefined
      ? this.#db.prepare('SELECT * FROM api_keys ORDER BY created_at, id').all()
      : this.#db.prepare('SELECT * FROM api_keys WHERE team_id = ? ORDER BY created_at, id').all(filter.teamId);
    return (rows as ApiKeyRow[]).map(keyFromRow);
  }
  touch(id: string, at: number): void {
    this.#db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?').run(at, id);
  }
  revoke(id: string, at: number): void {
    this.#db.prepare('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?').run(at, id);
  }
}

interface AuditRow {
  id: number;
  at: number;
  api_key_id: string | null;
  team_id: string | null;
  method: string;
  path: string;
  action: string;
  sandbox_id: string | null;
  status: number;
  error_code: string | null;
  tool: string | null;
}

export class AuditRows {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }
  append(e: Omit<AuditRecord, 'id'>): number {
    const result = this.#db
      .prepare('INSERT INTO audit_log (at, api_key_id, team_id, method, path, action, sandbox_id, status, error_code, tool) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(e.at, e.apiKeyId, e.teamId, e.method, e.path, e.action, e.sandboxId, e.status, e.errorCode, e.tool);
    return Number(result.lastInsertRowid);
  }
  list(query: AuditQuery): AuditRecord[] {
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.sandboxId !== undefined) {
      where.push('sandbox_id = ?');
      params.push(query.sandboxId);
    }
    if (query.teamId !== undefined) {
      where.push(query.withAnonymous ? '(team_id = ? OR team_id IS NULL)' : 'team_id = ?');
      params.push(query.teamId);
    }
    if (query.beforeId !== undefined) {
      where.push('id < ?');
      params.push(query.beforeId);
    }
    const limit = Math.min(Math.max(query.limit ?? 100, 1), 1000);
    const sql = `SELECT * FROM audit_log ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`;
    return (this.#db.prepare(sql).all(...params, limit) as AuditRow[]).map((r) => ({
      id: r.id,
      at: r.at,
      apiKeyId: r.api_key_id,
      teamId: r.team_id,
      method: r.method,
      path: r.path,
      action: r.action,
      sandboxId: r.sandbox_id,
      status: r.status,
      errorCode: r.error_code,
      tool: r.tool,
    }));
  }
}

export class SlotRows {
  readonly #db: Db;
  readonly #maxSlots: number;
  constructor(db: Db, maxSlots: number) {
    this.#db = db;
    this.#maxSlots = maxSlots;
  }
  /** Host `hostId`'s lowest free slot ≥ 1 (or the one already held there), in one transaction. */
  allocate(sandboxId: string, hostId: string): number {
    return this.#db.transaction(() => {
      const held = this.#db.prepare('SELECT slot, host_id FROM slots WHERE sandbox_id = ?').get(sandboxId) as { slot: number; host_id: string } | undefined;
      if (held?.host_id === hostId) return held.slot;
      if (held) this.release(sandboxId);
      const free = this.#db
        .prepare(
          `SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM slots WHERE host_id = :host AND slot = 1) THEN 1
                  ELSE (SELECT MIN(a.slot) + 1 FROM slots a WHERE a.host_id = :host
                          AND NOT EXISTS (SELECT 1 FROM slots b WHERE b.host_id = :host AND b.slot = a.slot + 1)) END AS slot`,
        )
        .get({ host: hostId }) as { slot: number };
      if (free.slot > this.#maxSlots) {
        throw new RamifyError('RUNTIME_UNAVAILABLE', `no free network slot: all ${this.#maxSlots} are in use`, { maxSlots: this.#maxSlots });
      }
      this.#db.prepare('INSERT INTO slots (host_id, slot, sandbox_id) VALUES (?, ?, ?)').run(hostId, free.slot, sandboxId);
      return free.slot;
    })();
  }
  release(sandboxId: string): void {
    this.#db.prepare('DELETE FROM slots WHERE sandbox_id = ?').run(sandboxId);
  }
  list(hostId: string): SlotLease[] {
    return (this.#db.prepare('SELECT host_id, slot, sandbox_id FROM slots WHERE host_id = ? ORDER BY slot').all(hostId) as Array<{ host_id: string; slot: number; sandbox_id: string }>).map((r) => ({
      hostId: r.host_id,
      slot: r.slot,
      sandboxId: r.sandbox_id,
    }));
  }
}
