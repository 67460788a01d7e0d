/**
 * API keys: `rmf_` + 32 random bytes (base64url). Only a sha256 of each key is stored, so a key is shown
 * once, when it is made. Keys are high-entropy, so a plain (unsalted) hash is enough to look them up.
 * Each key belongs to one team and has a role (docs/design/TEAMS.md): admin keys make, list and revoke
 * keys (of their own team; the default team's: of any team), member keys only use the team's sandboxes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { RamifyError, notFound, type ApiKeyInfo, type ApiKeyRole, type ApiKeyStatus, type CreateApiKeyRequest } from '@ramify/contracts';
import type { Core } from '../context.js';
import type { Clock } from '../ports/clock.js';
import type { ApiKeyRecord, Store, TeamRecord } from '../ports/store.js';
import { newApiKeyId } from '../ids.js';
import { DEFAULT_TEAM_ID, isOperator, requireAdmin, type Actor } from './actor.js';
import { visibleTeam } from '../teams/teams.js';

export const API_KEY_PREFIX = 'rmf_';

/** sha256 (hex) of a key, as stored. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Who a new key is for; default an admin key of the default team without expiry (the first-start key). */
export interface NewApiKeyOptions {
  teamId?: string;
  role?: ApiKeyRole;
  /** ms since the epoch; null or absent: until revoked. */
  expiresAt?: number | null;
}

/**
 * Make and store a new key (no permission check: the daemon's own start-up and tests; the API goes
 * through {@link issueApiKey}). The returned `key` is the only copy.
 */
export async function createApiKey(store: Store, clock: Clock, name: string, options: NewApiKeyOptions = {}): Promise<{ key: string; record: ApiKeyRecord }> {
  const key = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  const record: ApiKeyRecord = {
    id: newApiKeyId(),
    teamId: options.teamId ?? DEFAULT_TEAM_ID,
    role: options.role ?? 'admin',
    name,
    hash: hashApiKey(key),
    prefix: key.slice(0, 8),
    createdAt: clock.now(),
    lastUsedAt: null,
    expiresAt: options.expiresAt ?? null,
    revokedAt: null,
  };
  await store.insertApiKey(record);
  return { key, record };
}

/** Whether `record` opens anything at `now`: not revoked, not expired. */
export function isLiveKey(record: ApiKeyRecord, now: number): boolean {
  return record.revokedAt === null && (record.expiresAt === null || now < record.expiresAt);
}

/** The live key record matching `key` at `now` (ms), or null (malformed, unknown, revoked or expired). */
export async function verifyApiKey(store: Store, key: string, now: number): Promise<ApiKeyRecord | null> {
  if (!key.startsWith(API_KEY_PREFIX) || key.length > 256) return null;
  const record = await store.findApiKeyByHash(hashApiKey(key));
  return record && isLiveKey(record, now) ? record : null;
}

/**
 * The team whose keys `actor` (an admin key) asks to manage: its own; the operator: any existing team.
 * A team admin naming any other team is refused with the same 403 whether that team exists or not (so
 * it learns nothing), saying who manages other teams' keys.
 * @throws RamifyError `FORBIDDEN` (another team, not the operator), `TEAM_NOT_FOUND` (the operator naming an unknown team).
 */
async function keysTeam(core: Pick<Core, 'store'>, actor: Actor, teamId: string, what: string): Promise<TeamRecord> {
  if (teamId !== actor.teamId && !isOperator(actor)) {
    throw new RamifyError('FORBIDDEN',
      `${what} for team '${teamId}' is refused: this admin key of team '${actor.teamId}' manages the keys of team '${actor.teamId}' only (leave the team out); `
      + `the keys of other teams are managed by the operator (an admin key of the '${DEFAULT_TEAM_ID}' team)`,
      { team: actor.teamId, requested: teamId });
  }
  return visibleTeam(core, actor, teamId);
}

/**
 * `POST /v1/keys`: a new key for `input.team` (default the caller's), role `member` unless asked,
 * stored (hashed) before it resolves.
 * @throws RamifyError `FORBIDDEN` (a member key; a team admin naming another team), `TEAM_NOT_FOUND`
 *   (the operator naming an unknown team).
 */
export async function issueApiKey(core: Pick<Core, 'store' | 'clock'>, actor: Actor, input: CreateApiKeyRequest): Promise<{ key: string; record: ApiKeyRecord }> {
  requireAdmin(actor, 'creating API keys');
  const team = await keysTeam(core, actor, input.team ?? actor.teamId, 'creating an API key');
  const role = input.role ?? 'member';
  const expiresAt = input.ttlMs === undefined ? null : core.clock.now() + input.ttlMs;
  return createApiKey(core.store, core.clock, input.name ?? role, { teamId: team.id, role, expiresAt });
}

/**
 * The keys the caller manages, oldest first: its team's (the operator: every team's, or `filter.team`'s).
 * @throws RamifyError `FORBIDDEN` (a member key; a team admin naming another team), `TEAM_NOT_FOUND` (the operator naming an unknown team).
 */
export async function listApiKeys(core: Pick<Core, 'store'>, actor: Actor, filter: { team?: string } = {}): Promise<ApiKeyRecord[]> {
  requireAdmin(actor, 'listing API keys');
  if (filter.team !== undefined) return core.store.listApiKeys({ teamId: (await keysTeam(core, actor, filter.team, 'listing API keys')).id });
  return core.store.listApiKeys(isOperator(actor) ? {} : { teamId: actor.teamId });
}

/**
 * Revoke a key: refused (401) from the next request on. Idempotent on a revoked key.
 * @throws RamifyError `FORBIDDEN` (a member key), `API_KEY_NOT_FOUND` (unknown, or another team's for a
 *   non-operator), `CONFLICT` (the last live admin key of the default team: nobody could manage teams).
 */
export async function revokeApiKey(core: Pick<Core, 'store' | 'clock'>, actor: Actor, keyId: string): Promise<void> {
  requireAdmin(actor, 'revoking API keys');
  const record = await core.store.getApiKey(keyId);
  if (!record || (!isOperator(actor) && record.teamId !== actor.teamId)) throw notFound('API_KEY_NOT_FOUND', 'API key', keyId, { id: keyId });
  if (record.revokedAt !== null) return;
  const now = core.clock.now();
  if (record.teamId === DEFAULT_TEAM_ID && record.role === 'admin' && isLiveKey(record, now)) {
    const others = (await core.store.listApiKeys({ teamId: DEFAULT_TEAM_ID })).filter((k) => k.id !== record.id && k.role === 'admin' && isLiveKey(k, now));
    if (others.length === 0) {
      throw new RamifyError('CONFLICT', `API key '${keyId}' is the last admin key of the '${DEFAULT_TEAM_ID}' team; create another one first (ramify key create --team ${DEFAULT_TEAM_ID} --role admin)`, { id: keyId });
    }
  }
  await core.store.revokeApiKey(record.id, now);
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** Where `record` stands at `now` (ms): revoked wins over expired. */
export function apiKeyStatus(record: ApiKeyRecord, now: number): ApiKeyStatus {
  if (record.revokedAt !== null) return 'revoked';
  return isLiveKey(record, now) ? 'active' : 'expired';
}

/** The API shape of a key at `now` (ms; its `status` then), never its hash. */
export function toApiKeyInfo(r: ApiKeyRecord, now: number): ApiKeyInfo {
  return {
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    team: r.teamId,
    role: r.role,
    createdAt: new Date(r.createdAt).toISOString(),
    lastUsedAt: iso(r.lastUsedAt),
    expiresAt: iso(r.expiresAt),
    revokedAt: iso(r.revokedAt),
    status: apiKeyStatus(r, now),
  };
}
