/**
 * Team quotas (docs/design/TEAMS.md): at most `maxRunning` sandboxes holding resources at once, at most
 * `maxMemoryMB` of their memory, at most `maxForksPerCall` children per fork. A create, fork or resume
 * is admitted under one lock per team: the check counts what the store holds plus what admitted calls
 * still in flight will hold (their ids reserved here until they finish), so two concurrent calls cannot
 * both pass on the same room. A refused call has done nothing yet: it is 429 `QUOTA_EXCEEDED`.
 */
import { RamifyError, type SandboxState, type TeamQuota } from '@ramify/contracts';
import type { Core } from '../context.js';

/** States in which a sandbox holds its runtime's CPU and memory (paused ones hold only disk). */
export const HOLDING_STATES: readonly SandboxState[] = ['creating', 'running', 'pausing', 'resuming'];

/** One sandbox a call is about to bring up (or back). */
export interface SandboxDemand {
  id: string;
  memoryMB: number;
}

/** What a team holds now. */
export interface TeamUsage {
  running: number;
  memoryMB: number;
}

/** Admitted calls in flight, per core: team → sandbox id → memoryMB. */
const reservations = new WeakMap<Core, Map<string, Map<string, number>>>();

function reservedOf(core: Core, teamId: string): Map<string, number> {
  let teams = reservations.get(core);
  if (!teams) reservations.set(core, (teams = new Map()));
  let team = teams.get(teamId);
  if (!team) teams.set(teamId, (team = new Map()));
  return team;
}

/** Whether a quota limits anything at all. */
function limitsAnything(quota: TeamQuota): boolean {
  return quota.maxRunning !== null || quota.maxMemoryMB !== null;
}

/** What `teamId` holds now (stored holders and admitted calls in flight), `except` these ids. */
export async function teamUsage(core: Core, teamId: string, except: ReadonlySet<string> = new Set()): Promise<TeamUsage> {
  const held = new Map<string, number>();
  for (const s of await core.store.listResourceHolders(teamId, HOLDING_STATES)) held.set(s.id, s.memoryMB);
  for (const [id, memoryMB] of reservedOf(core, teamId)) held.set(id, memoryMB);
  let running = 0;
  let memoryMB = 0;
  for (const [id, mb] of held) {
    if (except.has(id)) continue;
    running += 1;
    memoryMB += mb;
  }
  return { running, memoryMB };
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
 * `fn` settles. Without limits `fn` runs at once.
 * @throws RamifyError `QUOTA_EXCEEDED` (429; `fn` never ran), and `fn`'s errors.
 */
export async function withinQuota<T>(core: Core, teamId: string, demand: readonly SandboxDemand[], fn: () => Promise<T>): Promise<T> {
  const first = await core.store.getTeam(teamId);
  if (!first || !limitsAnything(first.quota)) return fn();
  const ids = demand.map((d) => d.id);
  await core.locks.run(`team:${teamId}`, async () => {
    // The quota may have changed while this call waited for the lock.
    const quota = (await core.store.getTeam(teamId))?.quota ?? first.quota;
    const usage = await teamUsage(core, teamId, new Set(ids));
    const memory = demand.reduce((sum, d) => sum + d.memoryMB, 0);
    if (quota.maxRunning !== null && usage.running + demand.length > quota.maxRunning) throw exceeded(teamId, 'maxRunning', quota.maxRunning, usage.running, demand.length);
    if (quota.maxMemoryMB !== null && usage.memoryMB + memory > quota.maxMemoryMB) throw exceeded(teamId, 'maxMemoryMB', quota.maxMemoryMB, usage.memoryMB, memory, ' MiB');
    const reserved = reservedOf(core, teamId);
    for (const d of demand) reserved.set(d.id, d.memoryMB);
  });
  try {
    return await fn();
  } finally {
    const reserved = reservedOf(core, teamId);
    for (const id of ids) reserved.delete(id);
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
