/**
 * Team and API key routes (docs/design/TEAMS.md): teams with their quotas (made and changed by an admin
 * key of the default team), and API keys (made, listed and revoked by admin keys; a member key gets 403).
 * A new key's secret is in the create answer only; the store keeps its hash.
 */
import { ApiKeyParams, CreateApiKeyRequest, CreatedApiKey, CreateTeamRequest, ListApiKeysQuery, ListApiKeysResponse, ListTeamsResponse, TeamInfo, TeamParams, UpdateTeamRequest } from '@ramify/contracts';
import { createTeam, issueApiKey, listApiKeys, listTeams, revokeApiKey, setTeamQuota, toApiKeyInfo, toTeamInfo, visibleTeam } from '@ramify/core';
import { route, type RouteSpec } from '../http/route.js';

export const teamRoutes: RouteSpec[] = [
  route({
    operation: 'createTeam', summary: 'Create a team, optionally with its quota (an admin key of the default team)',
    description: 'The id is what people type (1-63 of a-z, 0-9 and -). 403 FORBIDDEN for any other key, 409 CONFLICT when the id is taken.',
    body: CreateTeamRequest, response: TeamInfo, status: 201,
    handler: async ({ core, body, actor }) => toTeamInfo(core, await createTeam(core, actor, body)),
  }),
  route({
    operation: 'listTeams', summary: "Teams with their quotas and usage: every team for the default team's admin keys, else the caller's own", response: ListTeamsResponse,
    handler: async ({ core, actor }) => ({ teams: await Promise.all((await listTeams(core, actor)).map((t) => toTeamInfo(core, t))) }),
  }),
  route({
    operation: 'getTeam', summary: 'One team, its quota and usage (404 TEAM_NOT_FOUND for a team the key cannot see)', params: TeamParams, response: TeamInfo,
    handler: async ({ core, params, actor }) => toTeamInfo(core, await visibleTeam(core, actor, params.team)),
  }),
  route({
    operation: 'setTeamQuota', summary: "Change a team's quota (an admin key of the default team); fields not given stay, null removes a limit",
    description: 'Limits are whole numbers from 0; exceeding one at create, fork or resume is 429 QUOTA_EXCEEDED naming it. A lower limit stops nothing already running.',
    params: TeamParams, body: UpdateTeamRequest, response: TeamInfo,
    handler: async ({ core, params, body, actor }) => toTeamInfo(core, await setTeamQuota(core, actor, params.team, body.quota)),
  }),
  route({
    operation: 'createApiKey', summary: 'Create an API key (an admin key); the secret is in this answer only',
    description: "team: default the caller's (another team takes an admin key of the default team; any other admin key naming another team is 403 FORBIDDEN, whether it exists or not; the operator naming an unknown team is 404 TEAM_NOT_FOUND); role: default member; ttlMs: default never expires. 403 FORBIDDEN for a member key.",
    body: CreateApiKeyRequest, response: CreatedApiKey, status: 201,
    handler: async ({ core, body, actor }) => {
      const { key, record } = await issueApiKey(core, actor, body);
      return { ...toApiKeyInfo(record, core.clock.now()), key };
    },
  }),
  route({
    operation: 'listApiKeys', summary: "API keys (an admin key): the caller's team's; the default team's admin keys see every team's (?team= filters)",
    description: "Each key's status: active, expired or revoked (as of this answer). ?team= of another team than the caller's is 403 FORBIDDEN unless the caller is an admin key of the default team.",
    query: ListApiKeysQuery, response: ListApiKeysResponse,
    handler: async ({ core, query, actor }) => {
      const now = core.clock.now();
      return { keys: (await listApiKeys(core, actor, query.team !== undefined ? { team: query.team } : {})).map((k) => toApiKeyInfo(k, now)) };
    },
  }),
  route({
    operation: 'revokeApiKey', summary: 'Revoke an API key (an admin key): refused from its next request on',
    description: "404 API_KEY_NOT_FOUND for another team's key; 409 CONFLICT for the default team's last admin key.",
    params: ApiKeyParams, status: 204,
    handler: async ({ core, params, actor }) => revokeApiKey(core, actor, params.keyId),
  }),
];
