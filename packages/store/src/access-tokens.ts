/**
 * Access token rows: one per sandbox (its token ports' credential, see core's `ingress/access-token.ts`),
 * written once (insert-or-keep), read on every ingress request. Deleted with the sandbox row.
 */
import { RamifyError } from '@ramify/contracts';
import type { Db } from './db.js';

export class AccessTokenRows {
  readonly #get;
  readonly #insert;

  constructor(db: Db) {
    this.#get = db.prepare('SELECT token FROM access_tokens WHERE sandbox_id = ?');
    this.#insert = db.prepare('INSERT INTO access_tokens (sandbox_id, token, created_at) VALUES (?, ?, ?) ON CONFLICT (sandbox_id) DO NOTHING');
  }

  get(sandboxId: string): string | null {
    return (this.#get.get(sandboxId) as { token: string } | undefined)?.token ?? null;
  }

  /** The stored token, storing `candidate` first when there is none. @throws RamifyError `SANDBOX_NOT_FOUND`. */
  ensure(sandboxId: string, candidate: string, at: number): string {
    try {
      this.#insert.run(sandboxId, candidate, at);
    } catch (err) {
      if ((err as { code?: unknown }).code === 'SQLITE_CONSTRAINT_FOREIGNKEY') throw new RamifyError('SANDBOX_NOT_FOUND', `sandbox '${sandboxId}' not found`, { id: sandboxId });
      throw err;
    }
    return this.get(sandboxId) as string;
  }
}
