/**
 * The PrivateNetworkEnforcer port: makes the host let two sandboxes talk while they share a private
 * network, and answer `<alias>.<network>.internal` to the network's members (docs/design/NETWORKS.md).
 * Core owns membership (validated, persisted in the store) and calls this port; the implementation holds
 * nothing that cannot be rebuilt from `apply` calls.
 *
 * Lifecycle, per slot: as the EgressEnforcer's. Core calls `apply` after the slot's egress policy is
 * enforced, while the sandbox's image is restored and before its agent is reached (create, fork child, resume), again on every live
 * attach or detach, and on daemon start for every running or paused sandbox (reconcile); `remove` when the
 * sandbox lets its slot go. Calls for one slot never overlap (core holds the sandbox's lock). Cost: one
 * `nft -f -` transaction (adding or removing the slot's pairs with every member it shares a network with)
 * plus an in-memory name table; milliseconds.
 */

/** One network a sandbox is on. */
export interface PrivateNetworkMembership {
  networkId: string;
  /** The network's name (a DNS label). */
  network: string;
  /** The sandbox's alias there (a DNS label, unique on the network). */
  alias: string;
}

export interface PrivateNetworkEnforcer {
  /**
   * Make `memberships` the networks of the sandbox on `slot` (replacing what it had; `[]`: none), in one
   * atomic change: from then on it and every member of those networks reach each other (any protocol and
   * port, both ways) and resolve each other's names; packets between it and sandboxes it no longer shares
   * a network with are dropped, open connections included. Idempotent. When it rejects, what was in force
   * stays in force.
   */
  apply(sandboxId: string, slot: number, memberships: readonly PrivateNetworkMembership[]): Promise<void>;
  /** Forget `slot` (it is on no network and no name resolves to it). A no-op when absent. */
  remove(slot: number): Promise<void>;
}
