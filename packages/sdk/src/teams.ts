/**
 * Teams and API keys (docs/design/TEAMS.md). Every sandbox, snapshot, template and SSH key belongs to a
 * team; an API key belongs to one team and sees only that team's resources (another team's sandbox is
 * `SANDBOX_NOT_FOUND`). Admin keys make, list and revoke keys; an admin key of the `default` team also
 * makes teams and sets their quotas. Plain functions taking {@link ConnectionOpts} last, like `listTemplates`.
 */
import { ROUTES } from '@ramify/contracts/client';
import type { ApiKeyInfo, ApiKeyRole, CreatedApiKey, ListApiKeysResponse, ListTeamsResponse, SetTeamQuotaRequest, TeamInfo } from '@ramify/contracts';
import { resolveConnection, type ConnectionOpts } from './connection.js';
import { ApiClient } from './http.js';

const client = (opts: ConnectionOpts = {}): ApiClient => new ApiClient(resolveConnection(opts));

/**
 * Make a team (an admin key of the default team), optionally with limits (absent: none).
 * @throws `FORBIDDEN` (403) for any other key, `VALIDATION_FAILED` (id, a negative limit), `CONFLICT` (id taken).
 */
export function createTeam(id: string, opts: ConnectionOpts & { quota?: SetTeamQuotaRequest } = {}): Promise<TeamInfo> {
  const { quota, ...conn } = opts;
  return client(conn).at(ROUTES.createTeam, {}).json({ json: { id, ...(quota ? { quota } : {}) } });
}

/** The teams the key sees (the default team's admin keys: every team; any other key: its own), by id, with quota and usage. */
export async function listTeams(opts?: ConnectionOpts): Promise<TeamInfo[]> {
  return (await client(opts).at(ROUTES.listTeams, {}).json<ListTeamsResponse>()).teams;
}

/** One team with its quota and what it holds now. @throws `TEAM_NOT_FOUND` (also a team the key cannot see). */
export function getTeam(team: string, opts?: ConnectionOpts): Promise<TeamInfo> {
  return client(opts).at(ROUTES.getTeam, { team }).json();
}

/**
 * Change a team's limits (an admin key of the default team): the fields given; null removes a limit.
 * Exceeding one at create, fork or resume is `QUOTA_EXCEEDED` (429).
 * @throws `FORBIDDEN`, `TEAM_NOT_FOUND`, `VALIDATION_FAILED` (not a whole number from 0).
 */
export function setTeamQuota(team: string, quota: SetTeamQuotaRequest, opts?: ConnectionOpts): Promise<TeamInfo> {
  return client(opts).at(ROUTES.setTeamQuota, { team }).json({ json: { quota } });
}

/** Options of {@link createApiKey}. */
export interface CreateApiKeyOpts extends ConnectionOpts {
  /** Default the caller's team; another team takes an admin key of the default team. */
  team?: string;
  /** Default `member`. */
  role?: ApiKeyRole;
  name?: string;
  /** Lifetime from now, ms (1 min to 10 years); default until revoked. */
  ttlMs?: number;
}

/**
 * Make an API key (an admin key). The secret is `key` of the answer, and only there: the daemon keeps a hash.
 * @throws `FORBIDDEN` (a member key), `TEAM_NOT_FOUND`, `VALIDATION_FAILED` (role, ttlMs).
 */
export function createApiKey(opts: CreateApiKeyOpts = {}): Promise<CreatedApiKey> {
  const { team, role, name, ttlMs, ...conn } = opts;
  const body = { ...(team !== undefined ? { team } : {}), ...(role !== undefined ? { role } : {}), ...(name !== undefined ? { name } : {}), ...(ttlMs !== undefined ? { ttlMs } : {}) };
  return client(conn).at(ROUTES.createApiKey, {}).json({ json: body });
}

/** The keys an admin key manages (its team's; the default team's admin keys: every team's, or `team`'s), oldest first, never their secrets. */
export async function listApiKeys(opts: ConnectionOpts & { team?: string } = {}): Promise<ApiKeyInfo[]> {
  const { team, ...conn } = opts;
  return (await client(conn).at(ROUTES.listApiKeys, {}).json<ListApiKeysResponse>({ query: { team } })).keys;
}

/**
 * Revoke a key by id (`key_...`): refused (401) from its next request on. Idempotent.
 * @throws `FORBIDDEN` (a member key), `API_KEY_NOT_FOUND`, `CONFLICT` (the default team's last admin key).
 */
export function revokeApiKey(keyId: string, opts?: ConnectionOpts): Promise<void> {
  return client(opts).at(ROUTES.revokeApiKey, { keyId }).empty();
}
