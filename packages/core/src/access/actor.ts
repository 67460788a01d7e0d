/**
 * Who is calling: the API key a request authenticated with, resolved to its team and role (see
 * docs/design/TEAMS.md). Every use-case that reads or changes a team's resources takes the caller's team
 * from here; a sandbox of another team is "not found", exactly as an unknown id (no existence leak).
 */
import { DEFAULT_TEAM, RamifyError, notFound, type ApiKeyRole } from '@ramify/contracts';
import type { Core } from '../context.js';
import type { SandboxRecord } from '../ports/store.js';

/** The team every pre-team resource and the first-start key belong to (`default`). */
export const DEFAULT_TEAM_ID: string = DEFAULT_TEAM;

/** An authenticated caller. */
export interface Actor {
  /** The API key's id (`key_...`). */
  keyId: string;
  /** The key's team: the only team whose resources it sees. */
  teamId: string;
  role: ApiKeyRole;
}

/** Whether `actor` manages every team (an admin key of the default team: the operator's). */
export function isOperator(actor: Actor): boolean {
  return actor.role === 'admin' && actor.teamId === DEFAULT_TEAM_ID;
}

/**
 * Throws unless `actor` is an admin key.
 * @throws RamifyError `FORBIDDEN` (403) naming what needs an admin key.
 */
export function requireAdmin(actor: Actor, what: string): void {
  if (actor.role !== 'admin') throw new RamifyError('FORBIDDEN', `${what} takes an admin API key; this key is a member key of team '${actor.teamId}'`, { role: actor.role });
}

/**
 * Throws unless `actor` is an admin key of the default team.
 * @throws RamifyError `FORBIDDEN` (403).
 */
export function requireOperator(actor: Actor, what: string): void {
  if (actor.role !== 'admin') throw new RamifyError('FORBIDDEN', `${what} takes an admin API key of the '${DEFAULT_TEAM_ID}' team; this key is a member key of team '${actor.teamId}'`, { role: actor.role });
  if (!isOperator(actor)) throw new RamifyError('FORBIDDEN', `${what} takes an admin API key of the '${DEFAULT_TEAM_ID}' team`, { team: actor.teamId });
}

/**
 * The sandbox `sandboxId` when it belongs to `teamId`.
 * @throws RamifyError `SANDBOX_NOT_FOUND` for an unknown id and for another team's sandbox alike.
 */
export async function ownedSandbox(core: Pick<Core, 'store'>, teamId: string, sandboxId: string): Promise<SandboxRecord> {
  const record = await core.store.getSandbox(sandboxId);
  if (!record || record.teamId !== teamId) throw notFound('SANDBOX_NOT_FOUND', 'sandbox', sandboxId, { id: sandboxId });
  return record;
}
