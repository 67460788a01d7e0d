/**
 * API key, audit log and slot lease rows.
 */
import { RamifyError } from '@ramify/contracts';
import type { ApiKeyRecord, AuditQuery, AuditRecord, SlotLease } from '@ramify/core';
import { conflictOnConstraint, type Db } from './db.js';

interface ApiKeyRow {
  id: string;
  name: string;
  hash: string;
  prefix: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

const keyFromRow = (r: ApiKeyRow): ApiKeyRecord => ({
  id: r.id,
  name: r.name,
  hash: r.hash,
  prefix: r.prefix,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
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
        .prepare('INSERT INTO api_keys (id, name, hash, prefix, created_at, last_used_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
        .run(k.id, k.name, k.hash, k.prefix, k.createdAt, k.lastUsedAt, k.revokedAt);
    } catch (err) {
      conflictOnConstraint(err, `API key '${k.id}' already exists`);
    }
  }
  byHash(hash: string): ApiKeyRecord | null {
    const row = this.#db.prepare('SELECT * FROM api_keys WHERE hash = ? AND revoked_at IS NULL').get(hash) as ApiKeyRow | undefined;
    return row ? keyFromRow(row) : null;
  }
  list(): ApiKeyRecord[] {
    return (this.#db.prepare('SELECT * FROM api_keys ORDER BY created_at, id').all() as ApiKeyRow[]).map(keyFromRow);
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
      .prepare('INSERT INTO audit_log (at, api_key_id, method, path, action, sandbox_id, status, error_code, tool) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(e.at, e.apiKeyId, e.method, e.path, e.action, e.sandboxId, e.status, e.errorCode, e.tool);
    return Number(result.lastInsertRowid);
  }
  list(query: AuditQuery): AuditRecord[] {
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.sandboxId !== undefined) {
      where.push('sandbox_id = ?');
      params.push(query.sandboxId);
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
  /** Lowest free slot ≥ 1 (or the one already held), in one transaction. */
  allocate(sandboxId: string): number {
    return this.#db.transaction(() => {
      const held = this.#db.prepare('SELECT slot FROM slots WHERE sandbox_id = ?').get(sandboxId) as { slot: number } | undefined;
      if (held) return held.slot;
      const free = this.#db
        .prepare(
          `SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM slots WHERE slot = 1) THEN 1
                  ELSE (SELECT MIN(a.slot) + 1 FROM slots a WHERE NOT EXISTS (SELECT 1 FROM slots b WHERE b.slot = a.slot + 1)) END AS slot`,
        )
        .get() as { slot: number };
      if (free.slot > this.#maxSlots) {
        throw new RamifyError('RUNTIME_UNAVAILABLE', `no free network slot: all ${this.#maxSlots} are in use`, { maxSlots: this.#maxSlots });
      }
      this.#db.prepare('INSERT INTO slots (slot, sandbox_id) VALUES (?, ?)').run(free.slot, sandboxId);
      return free.slot;
    })();
  }
  release(sandboxId: string): void {
    this.#db.prepare('DELETE FROM slots WHERE sandbox_id = ?').run(sandboxId);
  }
  list(): SlotLease[] {
    return (this.#db.prepare('SELECT slot, sandbox_id FROM slots ORDER BY slot').all() as Array<{ slot: number; sandbox_id: string }>).map((r) => ({
      slot: r.slot,
      sandboxId: r.sandbox_id,
    }));
  }
}
