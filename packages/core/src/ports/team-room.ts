/**
 * The part of the Store port that admits calls into a team's quota (docs/design/TEAMS.md) atomically across
 * every process sharing the store. Room a call was admitted to is **reserved** in the store (one row per
 * sandbox it brings up or back, with a holder and a lease on the database's clock) until the call releases
 * it or the lease runs out (a process that died holding it). A team's usage is its sandboxes holding
 * resources plus the live reservations of sandboxes not counted yet, each sandbox once. On Postgres the
 * check and the reservation run in one transaction holding the team's row lock (`FOR UPDATE`); on SQLite
 * the one connection's transactions take turns. `Store` extends this.
 */
import type { SandboxState, TeamQuota } from '@ramify/contracts';

/** What a team holds: sandboxes (each once) and the sum of their `memoryMB`. */
export interface TeamUsage {
  running: number;
  memoryMB: number;
}

/** One sandbox a call is about to bring up (or back), MiB. */
export interface SandboxDemand {
  id: string;
  memoryMB: number;
}

export interface TeamRoomRequest {
  teamId: string;
  demand: readonly SandboxDemand[];
  /** Sandbox states that hold resources (those paused inside a fork or snapshot of a running one count too). */
  holdingStates: readonly SandboxState[];
  /** Who holds the reservations (a host id): diagnostics. */
  holder: string;
  /** How long the reservations live unless renewed or released, ms (database clock). */
  leaseMs: number;
  /**
   * Whether `quota` has room for the demand over `usage` (the demand's own ids are not in it). Called once,
   * under the team's lock: pure and synchronous.
   */
  admits(quota: TeamQuota, usage: TeamUsage): boolean;
}

export interface TeamRoomResult {
  admitted: boolean;
  /** The quota and usage the decision saw. */
  quota: TeamQuota;
  usage: TeamUsage;
}

export interface TeamRoomStore {
  /**
   * Count the team's usage and, when `request.admits` says so, reserve the demand, atomically with every
   * other process's admission for the team. Expired reservations of the team are dropped on the way.
   * @returns null when the team does not exist.
   */
  reserveTeamRoom(request: TeamRoomRequest): Promise<TeamRoomResult | null>;
  /** Extend the live reservations of `sandboxIds` to `leaseMs` from now (a call still in flight). */
  renewTeamRoom(teamId: string, sandboxIds: readonly string[], leaseMs: number): Promise<void>;
  /** Drop the reservations of `sandboxIds` (the call settled: its sandboxes' rows count from now on). */
  releaseTeamRoom(teamId: string, sandboxIds: readonly string[]): Promise<void>;
  /** The team's usage now: holders plus live reservations, each sandbox once (one statement). */
  teamUsage(teamId: string, holdingStates: readonly SandboxState[]): Promise<TeamUsage>;
}
