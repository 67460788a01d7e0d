/**
 * Team quotas (docs/design/TEAMS.md): at most `maxRunning` sandboxes holding resources at once, at most
 * `maxMemoryMB` of their memory, at most `maxForksPerCall` children per fork. A create, fork or resume
 * is admitted atomically across every process sharing the store: the check counts what the store holds
 * plus what admitted calls still in flight will hold (reservations in the store until they finish), so two
 * concurrent calls, on one process or two, cannot both pass on the same room. A refused call has done
 * nothing yet: it is 429 `QUOTA_EXCEEDED`.
 */
import { RamifyError, type SandboxState, type TeamQuota } from '@ramify/contracts';
import type { Core } from '../context.js';
import type { SandboxDemand, TeamUsage } from '../ports/team-room.js';

/** States in which a sandbox holds its runtime's CPU and memory (paused ones hold only disk). */
export const HOLDING_STATES: readonly SandboxState[] = ['creating', 'running', 'pausing', 'resuming'];

/** How long an admitted call's reservation lives without renewal, ms (renewed every third of it while the call runs). */
export const RESERVATION_LEASE_MS = 30_000;

/** Whether a quota limits anything at all. */
function limitsAnything(quota: TeamQuota): boolean {
  return quota.maxRunning !== null || quota.maxMemoryMB !== null;
}

/** What `teamId` holds now: its sandboxes holding resources and the room admitted calls still hold. */
export async function teamUsage(core: Pick<Core, 'store'>, teamId: string): Promise<TeamUsage> {
  return core.store.teamUsage(teamId, HOLDING_STATES);
}

function exceeded(teamId: string, limit: 'maxRunning' | 'maxMemoryMB', max: number, current: number, requested: number, unit = ''): RamifyError {
  return new RamifyError(
    'QUOTA_EXCEEDED',
    `team '${teamId}' quota ${limit} is ${max}${unit}: ${current}${unit} in use, this call needs ${requested}${unit} more (nothing was created or started)`,
    { team: teamId, limit, max, current, requested },
  );
}

/**
 * Run `fn` (which brings `demand` up) once the team's quota has room for it, holding that room until
 * `fn` settles: admitted and reserved in one store transaction under the team's row lock, so calls on
 * any process sharing the store take turns (`ports/team-room.ts`); the reservation's lease is renewed
 * while `fn` runs, so it outlives a slow call and not a dead process. Without limits `fn` runs at once.
 * @throws RamifyError `QUOTA_EXCEEDED` (429; `fn` never ran), and `fn`'s errors.
 */
export async function withinQuota<T>(core: Core, teamId: string, demand: readonly SandboxDemand[], fn: () => Promise<T>): Promise<T> {
  const first = await core.store.getTeam(teamId);
  if (!first || !limitsAnything(first.quota)) return fn();
  const ids = demand.map((d) => d.id);
  const memory = demand.reduce((sum, d) => sum + d.memoryMB, 0);
  const fits = (quota: TeamQuota, usage: TeamUsage): boolean =>
    (quota.maxRunning === null || usage.running + demand.length <= quota.maxRunning) && (quota.maxMemoryMB === null || usage.memoryMB + memory <= quota.maxMemoryMB);
  const result = await core.store.reserveTeamRoom({ teamId, demand, holdingStates: HOLDING_STATES, holder: core.locks.hostId, leaseMs: RESERVATION_LEASE_MS, admits: fits });
  if (result && !result.admitted) {
    const { quota, usage } = result;
    if (quota.maxRunning !== null && usage.running + demand.length > quota.maxRunning) throw exceeded(teamId, 'maxRunning', quota.maxRunning, usage.running, demand.length);
    throw exceeded(teamId, 'maxMemoryMB', quota.maxMemoryMB ?? 0, usage.memoryMB, memory, ' MiB');
  }
  const renew = setInterval(() => {
    core.store.renewTeamRoom(teamId, ids, RESERVATION_LEASE_MS).catch((err: unknown) => core.logger.warn('quota: renewing a reservation failed', { teamId, error: err instanceof Error ? err.message : String(err) }));
  }, RESERVATION_LEASE_MS / 3);
  renew.unref();
  try {
    return await fn();
  } finally {
    clearInterval(renew);
    await core.store.releaseTeamRoom(teamId, ids).catch((err: unknown) => core.logger.warn('quota: releasing a reservation failed; it expires by itself', { teamId, error: err instanceof Error ? err.message : String(err) }));
  }
}

/**
 * Throws when one fork of `count` children is more than the team allows per call.
 * @throws RamifyError `QUOTA_EXCEEDED` (limit `maxForksPerCall`).
 */
export async function checkForkCount(core: Pick<Core, 'store'>, teamId: string, count: number): Promise<void> {
  const max = (await core.store.getTeam(teamId))?.quota.maxForksPerCall ?? null;
  if (max !== null && count > max) {
    throw new RamifyError('QUOTA_EXCEEDED', `team '${teamId}' quota maxForksPerCall is ${max}: this fork asks for ${count} children (nothing was forked)`, {
      team: teamId, limit: 'maxForksPerCall', max, current: 0, requested: count,
    });
  }
}
