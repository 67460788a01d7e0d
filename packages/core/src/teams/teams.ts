/**
 * Use-cases: teams (docs/design/TEAMS.md). A team is an id people type (`acme`) and a quota. The
 * operator (an admin key of the default team) makes teams, sees all of them and sets their quotas; any
 * other key sees only its own team. A team it cannot see is `TEAM_NOT_FOUND`, as an unknown one.
 */
import { MAX_QUOTA_VALUE, RamifyError, TeamId, invalidField, notFound, type CreateTeamRequest, type SetTeamQuotaRequest, type TeamInfo, type TeamQuota } from '@ramify/contracts';
import type { Core } from '../context.js';
import type { TeamRecord } from '../ports/store.js';
import { isOperator, requireOperator, type Actor } from '../access/actor.js';
import { teamUsage } from './quota.js';

/** No limits. */
export const NO_QUOTA: TeamQuota = { maxRunning: null, maxMemoryMB: null, maxForksPerCall: null };

/**
 * `quota` with `patch` applied (absent: kept; null: no limit). `where`: the patch's path in the request
 * (`body.quota` at create, `body` for a quota change), which the issue's path starts with.
 * @throws RamifyError `VALIDATION_FAILED` naming a field that is not a whole number from 0 to {@link MAX_QUOTA_VALUE}
 *   (`details.issues` as a schema's, issue-messages.ts; `details.field` kept for older clients).
 */
export function applyQuota(quota: TeamQuota, patch: SetTeamQuotaRequest, where = 'body'): TeamQuota {
  const next: TeamQuota = { ...quota };
  for (const field of ['maxRunning', 'maxMemoryMB', 'maxForksPerCall'] as const) {
    const value = patch[field];
    if (value === undefined) continue;
    if (value !== null && (!Number.isInteger(value) || value < 0 || value > MAX_QUOTA_VALUE)) {
      throw invalidField(`${where}.${field}`, `must be an integer from 0 to ${MAX_QUOTA_VALUE}, or null, got ${JSON.stringify(value)}`, { field });
    }
    next[field] = value;
  }
  return next;
}

/**
 * The team `teamId` when `actor` may see it (its own; the operator: any).
 * @throws RamifyError `TEAM_NOT_FOUND` otherwise: for any key but the operator's, the same message whether
 *   the team exists or not, saying which team the key sees.
 */
export async function visibleTeam(core: Pick<Core, 'store'>, actor: Actor, teamId: string): Promise<TeamRecord> {
  const team = teamId === actor.teamId || isOperator(actor) ? await core.store.getTeam(teamId) : null;
  if (!team) {
    const scope = isOperator(actor) ? '' : ` (a key of team '${actor.teamId}' sees that team only)`;
    throw notFound('TEAM_NOT_FOUND', 'team', teamId, { id: teamId }, scope);
  }
  return team;
}

/**
 * Make a team (stored before it resolves).
 * @throws RamifyError `FORBIDDEN` (not the operator), `VALIDATION_FAILED` (id, quota), `CONFLICT` (id taken).
 */
export async function createTeam(core: Pick<Core, 'store' | 'clock'>, actor: Actor, input: CreateTeamRequest): Promise<TeamRecord> {
  requireOperator(actor, 'creating teams');
  const parsed = TeamId.safeParse(input.id);
  if (!parsed.success) throw invalidField('body.id', parsed.error.issues[0]?.message ?? 'invalid', { field: 'id' });
  const record: TeamRecord = { id: parsed.data, createdAt: core.clock.now(), quota: applyQuota(NO_QUOTA, input.quota ?? {}, 'body.quota') };
  await core.store.insertTeam(record);
  return record;
}

/** The teams `actor` sees, by id: every team for the operator, else its own. */
export async function listTeams(core: Pick<Core, 'store'>, actor: Actor): Promise<TeamRecord[]> {
  if (isOperator(actor)) return core.store.listTeams();
  const own = await core.store.getTeam(actor.teamId);
  return own ? [own] : [];
}

/**
 * Change a team's quota (absent fields kept, null: no limit). Calls already admitted go on; the next
 * create, fork or resume meets the new limits.
 * @throws RamifyError `FORBIDDEN` (not the operator), `TEAM_NOT_FOUND`, `VALIDATION_FAILED`.
 */
export async function setTeamQuota(core: Core, actor: Actor, teamId: string, patch: SetTeamQuotaRequest): Promise<TeamRecord> {
  requireOperator(actor, "setting a team's quota");
  const team = await visibleTeam(core, actor, teamId);
  applyQuota(team.quota, patch); // Validates the patch (VALIDATION_FAILED before anything is written).
  return core.store.setTeamQuota(team.id, patch);
}

/** The API shape of a team, with what it holds now. */
export async function toTeamInfo(core: Core, record: TeamRecord): Promise<TeamInfo> {
  return { id: record.id, createdAt: new Date(record.createdAt).toISOString(), quota: { ...record.quota }, usage: await teamUsage(core, record.id) };
}
