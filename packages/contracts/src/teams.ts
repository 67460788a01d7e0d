/**
 * The teams and API keys contract (see docs/design/TEAMS.md). Every sandbox, snapshot, template and SSH
 * key belongs to a team; an API key belongs to one team and has a role: `admin` (manage keys; of the
 * `default` team: manage every team and its quota) or `member` (use the team's sandboxes). A key sees
 * and touches only its own team's resources: another team's id is 404, as if it did not exist.
 */
import { z } from 'zod';
import { mustBe } from './issue-messages.js';
import { MAX_QUOTA_VALUE, MIN_API_KEY_TTL_MS, MAX_API_KEY_TTL_MS } from './constants.js';

/** The team every existing resource and the first-start key belong to; its templates are shared with every team. */
export const DEFAULT_TEAM = 'default';

/** What a team id is, as a message says it (`must be ..., got 'Acme'`). */
export const TEAM_ID_RULE = '1-63 lower-case letters, digits and -, starting with a letter or digit';

/**
 * A team id: 1-63 of lower-case letters, digits and `-`, starting with a letter or digit (a name people
 * type). Its message says the rule and echoes the id, quoted and cut (issue-messages.ts).
 */
export const TeamId = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, mustBe(TEAM_ID_RULE));

/** An API key's role. */
export const ApiKeyRole = z.enum(['admin', 'member']);
export type ApiKeyRole = z.infer<typeof ApiKeyRole>;

const Limit = z.number().int().min(0).max(MAX_QUOTA_VALUE).nullable();

/**
 * A team's limits; null: no limit. Checked at create, fork and resume (auto-resume included) under one
 * lock per team, so two concurrent calls cannot both pass; exceeded is 429 `QUOTA_EXCEEDED`.
 */
export const TeamQuota = z.object({
  /** Sandboxes creating, running, pausing or resuming at once (paused ones do not count). */
  maxRunning: Limit,
  /** Sum of those sandboxes' `memoryMB`, MiB. */
  maxMemoryMB: Limit,
  /** Largest `count` of one fork (and so of one `explore` step). */
  maxForksPerCall: Limit,
});
export type TeamQuota = z.infer<typeof TeamQuota>;

/** A quota change: the limits to change; an absent field is left as it is, null removes the limit. */
export const SetTeamQuotaRequest = z.strictObject({
  maxRunning: Limit.optional(),
  maxMemoryMB: Limit.optional(),
  maxForksPerCall: Limit.optional(),
});
export type SetTeamQuotaRequest = z.infer<typeof SetTeamQuotaRequest>;

/** `PATCH /v1/teams/{team}`: change the team's quota (the fields given). */
export const UpdateTeamRequest = z.strictObject({ quota: SetTeamQuotaRequest });
export type UpdateTeamRequest = z.infer<typeof UpdateTeamRequest>;

/** `POST /v1/teams`. */
export const CreateTeamRequest = z.strictObject({
  id: TeamId,
  /** Limits from the start (absent fields: no limit). */
  quota: SetTeamQuotaRequest.optional(),
});
export type CreateTeamRequest = z.infer<typeof CreateTeamRequest>;

/** A team, its quota and what it uses now. */
export const TeamInfo = z.object({
  id: z.string(),
  /** ISO time. */
  createdAt: z.string(),
  quota: TeamQuota,
  /** What counts against the quota now. */
  usage: z.object({ running: z.number().int(), memoryMB: z.number().int() }),
});
export type TeamInfo = z.infer<typeof TeamInfo>;

export const ListTeamsResponse = z.object({ teams: z.array(TeamInfo) });
export type ListTeamsResponse = z.infer<typeof ListTeamsResponse>;

/** `/v1/teams/:team` params. */
export const TeamParams = z.strictObject({ team: z.string().min(1).max(128) });

/** `POST /v1/keys`. */
export const CreateApiKeyRequest = z.strictObject({
  /** The key's team; default the caller's. Another team than its own takes an admin key of the default team. */
  team: z.string().min(1).max(128).optional(),
  /** Default `member`. */
  role: ApiKeyRole.optional(),
  /** A label for people, at most 128 characters; default the role. */
  name: z.string().min(1).max(128).optional(),
  /** Lifetime from now, ms (1 min to 10 years); absent: until revoked. */
  ttlMs: z.number().int().min(MIN_API_KEY_TTL_MS).max(MAX_API_KEY_TTL_MS).optional(),
});
export type CreateApiKeyRequest = z.infer<typeof CreateApiKeyRequest>;

/** An API key as listed (never its secret: only a hash of it is stored). */
/** Where a key stands at the time of the answer. */
export const ApiKeyStatus = z.enum(['active', 'expired', 'revoked']);
export type ApiKeyStatus = z.infer<typeof ApiKeyStatus>;

export const ApiKeyInfo = z.object({
  /** `key_<ulid>`. */
  id: z.string(),
  name: z.string(),
  /** The first characters of the secret (`rmf_AbCd`), to recognise it. */
  prefix: z.string(),
  team: z.string(),
  role: ApiKeyRole,
  /** ISO times; `lastUsedAt` is written at most once a minute. */
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  /** Null: until revoked. */
  expiresAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
  /**
   * Whether the key opens anything now: `active`, `expired` (its `expiresAt` has passed) or `revoked`
   * (revoked wins over expired). Expired and revoked keys are 401 on every request.
   */
  status: ApiKeyStatus,
});
export type ApiKeyInfo = z.infer<typeof ApiKeyInfo>;

/** `POST /v1/keys` answer: the key with its secret in `key`, shown this once. */
export const CreatedApiKey = ApiKeyInfo.extend({
  /** `rmf_` + 43 characters: the secret, in this answer only. */
  key: z.string(),
});
export type CreatedApiKey = z.infer<typeof CreatedApiKey>;

export const ListApiKeysQuery = z.strictObject({ team: z.string().min(1).max(128).optional() });
export const ListApiKeysResponse = z.object({ keys: z.array(ApiKeyInfo) });
export type ListApiKeysResponse = z.infer<typeof ListApiKeysResponse>;

/** `/v1/keys/:keyId` params. */
export const ApiKeyParams = z.strictObject({ keyId: z.string().min(1).max(128) });
