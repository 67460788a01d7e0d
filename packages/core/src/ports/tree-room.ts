/**
 * The part of the Store port that admits a fork's children into the `maxSandboxes` of the budgets covering
 * its parent (docs/design/USAGE.md), atomically across every process sharing the store: a fork tree's
 * members can live on several hosts (resumed elsewhere), and forks run on their parent's host, so two
 * forks in one tree may be admitted on two processes at once. Admitted children are **reserved** per
 * budget (a holder and a lease on the database's clock) until the fork settles or the lease runs out.
 * On Postgres the check and the reservation run in one transaction holding the budgets' rows
 * (`FOR UPDATE`, in id order); SQLite's one connection takes turns. `Store` extends this.
 */
import type { SandboxState } from '@ramify/contracts';

export interface TreeRoomRequest {
  /** The budgets (by the sandbox each is set on) whose `maxSandboxes` the children count against. */
  budgetSandboxIds: readonly string[];
  childIds: readonly string[];
  /** States of a member that is no longer alive (it counts against nothing). */
  deadStates: readonly SandboxState[];
  holder: string;
  /** How long the reservations live unless renewed or released, ms (database clock). */
  leaseMs: number;
  /**
   * Whether the budget set on `budgetSandboxId` has room for the children over `alive` (its tree's live
   * members and reserved children, each once; the children themselves not counted). Called under the
   * budgets' locks, once per budget: pure and synchronous.
   */
  admits(budgetSandboxId: string, alive: number): boolean;
}

export interface TreeRoomResult {
  /** The first budget that had no room (nothing was reserved then), or null: all reserved. */
  refused: { budgetSandboxId: string; alive: number } | null;
}

export interface TreeRoomStore {
  /** Check every budget and, when all admit, reserve the children against each, atomically. */
  reserveTreeRoom(request: TreeRoomRequest): Promise<TreeRoomResult>;
  /** Extend the live reservations of `childIds` to `leaseMs` from now. */
  renewTreeRoom(childIds: readonly string[], leaseMs: number): Promise<void>;
  /** Drop the reservations of `childIds` (the fork settled: the children's rows count from now on). */
  releaseTreeRoom(childIds: readonly string[]): Promise<void>;
}
