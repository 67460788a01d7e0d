/**
 * A sandbox's access token: the credential of its `token` ports. 32 random bytes (256 bits) as
 * `rit_` + base64url (43 characters); made at create (a fork gets its own), stored before it is handed
 * out, compared in constant time, never logged.
 */
import * as crypto from 'node:crypto';
import { timingSafeEqual } from 'node:crypto';
import type { Core } from '../context.js';

/** Bytes of entropy in a token. */
export const ACCESS_TOKEN_BYTES = 32;
const TOKEN_FORMAT = /^rit_[A-Za-z0-9_-]{43}$/;

/** A fresh token from `entropy` (the core's: `crypto.randomBytes` unless a test gives another). */
export function newAccessToken(entropy: (bytes: number) => Uint8Array): string {
  return `rit_${Buffer.from(entropy(ACCESS_TOKEN_BYTES)).toString('base64url')}`;
}

/** True when `value` has the token format (says nothing about whose it is). */
export function isWellFormedToken(value: string): boolean {
  return TOKEN_FORMAT.test(value);
}

/** Constant-time equality of a presented token and the stored one. */
export function tokensEqual(presented: string, stored: string): boolean {
  const a = Buffer.from(presented, 'utf8');
  const b = Buffer.from(stored, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * What checks a token without holding it: the SHA-256 of the token, base64url (43 characters). The
 * ingress's thread keeps only this (see docs/design/INGRESS.md, "Where the ingress runs").
 */
export function tokenVerifier(token: string): string {
  return sha256(token).toString('base64url');
}

/** Whether `presented` is the token `verifier` was made from (constant-time on the digests). */
export function matchesVerifier(presented: string, verifier: string): boolean {
  const a = sha256(presented);
  const b = Buffer.from(verifier, 'base64url');
  return a.length === b.length && timingSafeEqual(a, b);
}

// One-shot `crypto.hash` (Node >= 20.12; no Hash object per call: it runs on every token request) or createHash.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'buffer') => Buffer }).hash;
const sha256 = (s: string): Buffer => (oneShot ? oneShot('sha256', s, 'buffer') : crypto.createHash('sha256').update(s, 'utf8').digest());

/**
 * The sandbox's token, made and stored now when it has none (sandboxes created before tokens existed).
 * @throws RamifyError `SANDBOX_NOT_FOUND`.
 */
export async function sandboxAccessToken(core: Pick<Core, 'store' | 'entropy' | 'clock'>, sandboxId: string): Promise<string> {
  return (await core.store.getAccessToken(sandboxId)) ?? core.store.ensureAccessToken(sandboxId, newAccessToken(core.entropy), core.clock.now());
}
