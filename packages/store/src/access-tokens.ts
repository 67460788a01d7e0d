/**
 * Access token rows: one per sandbox (its token ports' credential, see core's `ingress/access-token.ts`),
 * written once (insert-or-keep), read on every ingress request. Deleted with the sandbox row.
 */
import { RamifyError, notFound } from '@ramify/contracts';
import { onMissingParent } from './errors.js';
import type { Executor } from './schema.js';

export async function getAccessToken(db: Executor, sandboxId: string): Promise<string | null> {
  return (await db.selectFrom('access_tokens').select('token').where('sandbox_id', '=', sandboxId).executeTakeFirst())?.token ?? null;
}

/** The stored token, storing `candidate` first when there is none (one atomic insert-or-keep). @throws RamifyError `SANDBOX_NOT_FOUND`. */
export async function ensureAccessToken(db: Executor, sandboxId: string, candidate: string, at: number): Promise<string> {
  try {
    await db.insertInto('access_tokens').values({ sandbox_id: sandboxId, token: candidate, created_at: at }).onConflict((oc) => oc.column('sandbox_id').doNothing()).execute();
  } catch (err) {
    onMissingParent(err, () => notFound('SANDBOX_NOT_FOUND', 'sandbox', sandboxId, { id: sandboxId }));
    throw err;
  }
  const token = await getAccessToken(db, sandboxId);
  if (token === null) throw notFound('SANDBOX_NOT_FOUND', 'sandbox', sandboxId, { id: sandboxId });
  return token;
}
