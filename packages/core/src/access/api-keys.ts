/**
 * API keys: `rmf_` + 32 random bytes (base64url). Only a sha256 of each key is stored, so a key is shown
 * once, when it is made. Keys are high-entropy, so a plain (unsalted) hash is enough to look them up.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../ports/clock.js';
import type { ApiKeyRecord, Store } from '../ports/store.js';
import { newApiKeyId } from '../ids.js';

export const API_KEY_PREFIX = 'rmf_';

/** sha256 (hex) of a key, as stored. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Make and store a new key; the returned `key` is the only copy. */
export async function createApiKey(store: Store, clock: Clock, name: string): Promise<{ key: string; record: ApiKeyRecord }> {
  const key = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  const record: ApiKeyRecord = { id: newApiKeyId(), name, hash: hashApiKey(key), prefix: key.slice(0, 8), createdAt: clock.now(), lastUsedAt: null, revokedAt: null };
  await store.insertApiKey(record);
  return { key, record };
}

/** The un-revoked key record matching `key`, or null (malformed, unknown or revoked). */
export async function verifyApiKey(store: Store, key: string): Promise<ApiKeyRecord | null> {
  if (!key.startsWith(API_KEY_PREFIX) || key.length > 256) return null;
  return store.findApiKeyByHash(hashApiKey(key));
}
