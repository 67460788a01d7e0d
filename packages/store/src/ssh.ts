/**
 * SSH gateway rows: registered public keys (each a team's, unique by fingerprint within it) and short-lived access tokens (by the
 * token's sha256; see core's `ssh/`). Each call is one statement or one short transaction.
 */
import { RamifyError, notFound } from '@ramify/contracts';
import type { SshKeyRecord, SshTokenRecord } from '@ramify/core';
import type { Selectable } from 'kysely';
import { constraintKind, onMissingParent } from './errors.js';
import { inTransaction, type Executor, type SshKeysTable } from './schema.js';

type SshKeyRow = Selectable<SshKeysTable>;

const keyFromRow = (r: SshKeyRow): SshKeyRecord => ({
  id: r.id, teamId: r.team_id, ownerApiKeyId: r.owner_api_key_id, name: r.name, type: r.type, fingerprint: r.fingerprint, publicKey: r.public_key, createdAt: r.created_at,
});

/** @throws RamifyError SSH_KEY_EXISTS when the team has the fingerprint registered already. */
export async function insertSshKey(db: Executor, k: SshKeyRecord): Promise<void> {
  try {
    await db
      .insertInto('ssh_keys')
      .values({ id: k.id, team_id: k.teamId, owner_api_key_id: k.ownerApiKeyId, name: k.name, type: k.type, fingerprint: k.fingerprint, public_key: k.publicKey, created_at: k.createdAt })
      .execute();
  } catch (err) {
    if (constraintKind(err) === null) throw err;
    const existing = await sshKeyByFingerprint(db, k.fingerprint, k.teamId);
    throw new RamifyError('SSH_KEY_EXISTS', `this public key (${k.fingerprint}) is registered already${existing ? ` as '${existing.id}'` : ''}`, {
      fingerprint: k.fingerprint, ...(existing ? { id: existing.id } : {}),
    });
  }
}

/** Oldest first; only the team's when `teamId` is given. */
export async function listSshKeys(db: Executor, teamId?: string): Promise<SshKeyRecord[]> {
  let q = db.selectFrom('ssh_keys').selectAll();
  if (teamId !== undefined) q = q.where('team_id', '=', teamId);
  return (await q.orderBy('created_at').orderBy('id').execute()).map(keyFromRow);
}

export async function sshKeyByFingerprint(db: Executor, fingerprint: string, teamId: string): Promise<SshKeyRecord | null> {
  const row = await db.selectFrom('ssh_keys').selectAll().where('team_id', '=', teamId).where('fingerprint', '=', fingerprint).executeTakeFirst();
  return row ? keyFromRow(row) : null;
}

export async function deleteSshKey(db: Executor, id: string, teamId: string): Promise<boolean> {
  return (await db.deleteFrom('ssh_keys').where('id', '=', id).where('team_id', '=', teamId).executeTakeFirst()).numDeletedRows > 0n;
}

/** Store the token and drop the ones expired by its creation, in one transaction. @throws RamifyError SANDBOX_NOT_FOUND. */
export async function insertSshToken(db: Executor, t: SshTokenRecord): Promise<void> {
  try {
    await inTransaction(db, async (trx) => {
      await trx.deleteFrom('ssh_tokens').where('expires_at', '<=', t.createdAt).execute();
      await trx
        .insertInto('ssh_tokens')
        .values({ hash: t.hash, sandbox_id: t.sandboxId, owner_api_key_id: t.ownerApiKeyId, created_at: t.createdAt, expires_at: t.expiresAt })
        .execute();
    });
  } catch (err) {
    onMissingParent(err, () => notFound('SANDBOX_NOT_FOUND', 'sandbox', t.sandboxId, { id: t.sandboxId }));
    throw err;
  }
}

export async function sshTokenByHash(db: Executor, hash: string): Promise<SshTokenRecord | null> {
  const r = await db.selectFrom('ssh_tokens').selectAll().where('hash', '=', hash).executeTakeFirst();
  return r ? { hash: r.hash, sandboxId: r.sandbox_id, ownerApiKeyId: r.owner_api_key_id, createdAt: r.created_at, expiresAt: r.expires_at } : null;
}

export async function deleteSshToken(db: Executor, hash: string): Promise<boolean> {
  return (await db.deleteFrom('ssh_tokens').where('hash', '=', hash).executeTakeFirst()).numDeletedRows > 0n;
}

/** Part of a kill's write: the sandbox's tokens open nothing any more. */
export async function deleteSshTokensOf(db: Executor, sandboxId: string): Promise<void> {
  await db.deleteFrom('ssh_tokens').where('sandbox_id', '=', sandboxId).execute();
}
