/**
 * SSH gateway rows: registered public keys (each a team's, unique by fingerprint within it) and short-lived access tokens (by the
 * token's sha256; see core's `ssh/`). Each call is one statement or one short transaction.
 */
import { RamifyError } from '@ramify/contracts';
import type { SshKeyRecord, SshTokenRecord } from '@ramify/core';
import type { Db } from './db.js';

interface SshKeyRow {
  id: string;
  team_id: string;
  owner_api_key_id: string | null;
  name: string;
  type: string;
  fingerprint: string;
  public_key: string;
  created_at: number;
}

interface SshTokenRow {
  hash: string;
  sandbox_id: string;
  owner_api_key_id: string | null;
  created_at: number;
  expires_at: number;
}

const keyFromRow = (r: SshKeyRow): SshKeyRecord => ({
  id: r.id, teamId: r.team_id, ownerApiKeyId: r.owner_api_key_id, name: r.name, type: r.type, fingerprint: r.fingerprint, publicKey: r.public_key, createdAt: r.created_at,
});

const constraint = (err: unknown): string => String((err as { code?: unknown }).code ?? '');

export class SshRows {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  /** @throws RamifyError SSH_KEY_EXISTS when the team has the fingerprint registered already. */
  insertKey(k: SshKeyRecord): void {
    try {
      this.#db
        .prepare('INSERT INTO ssh_keys (id, team_id, owner_api_key_id, name, type, fingerprint, public_key, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
        .run(k.id, k.teamId, k.ownerApiKeyId, k.name, k.type, k.fingerprint, k.publicKey, k.createdAt);
    } catch (err) {
      if (!constraint(err).startsWith('SQLITE_CONSTRAINT')) throw err;
      const existing = this.keyByFingerprint(k.fingerprint, k.teamId);
      throw new RamifyError('SSH_KEY_EXISTS', `this public key (${k.fingerprint}) is registered already${existing ? ` as '${existing.id}'` : ''}`, {
        fingerprint: k.fingerprint, ...(existing ? { id: existing.id } : {}),
      });
    }
  }

  listKeys(teamId?: string): SshKeyRecord[] {
    const rows = teamId === undefined
      ? this.#db.prepare('SELECT * FROM ssh_keys ORDER BY created_at, id').all()
      : this.#db.prepare('SELECT * FROM ssh_keys WHERE team_id = ? ORDER BY created_at, id').all(teamId);
    return (rows as SshKeyRow[]).map(keyFromRow);
  }

  keyByFingerprint(fingerprint: string, teamId: string): SshKeyRecord | null {
    const row = this.#db.prepare('SELECT * FROM ssh_keys WHERE team_id = ? AND fingerprint = ?').get(teamId, fingerprint) as SshKeyRow | undefined;
    return row ? keyFromRow(row) : null;
  }

  deleteKey(id: string, teamId: string): boolean {
    return this.#db.prepare('DELETE FROM ssh_keys WHERE id = ? AND team_id = ?').run(id, teamId).changes > 0;
  }

  /** Store the token and drop the ones expired by its creation, in one transaction. @throws RamifyError SANDBOX_NOT_FOUND. */
  insertToken(t: SshTokenRecord): void {
    this.#db.transaction(() => {
      this.#db.prepare('DELETE FROM ssh_tokens WHERE expires_at <= ?').run(t.createdAt);
      try {
        this.#db
          .prepare('INSERT INTO ssh_tokens (hash, sandbox_id, owner_api_key_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)')
          .run(t.hash, t.sandboxId, t.ownerApiKeyId, t.createdAt, t.expiresAt);
      } catch (err) {
        if (constraint(err) === 'SQLITE_CONSTRAINT_FOREIGNKEY') throw new RamifyError('SANDBOX_NOT_FOUND', `sandbox '${t.sandboxId}' not found`, { id: t.sandboxId });
        throw err;
      }
    })();
  }

  tokenByHash(hash: string): SshTokenRecord | null {
    const r = this.#db.prepare('SELECT * FROM ssh_tokens WHERE hash = ?').get(hash) as SshTokenRow | undefined;
    return r ? { hash: r.hash, sandboxId: r.sandbox_id, ownerApiKeyId: r.owner_api_key_id, createdAt: r.created_at, expiresAt: r.expires_at } : null;
  }

  /** Part of a kill's write: the sandbox's tokens open nothing any more. */
  deleteTokensOf(sandboxId: string): void {
    this.#db.prepare('DELETE FROM ssh_tokens WHERE sandbox_id = ?').run(sandboxId);
  }
}
