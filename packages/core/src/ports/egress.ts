/**
 * The EgressEnforcer port: makes the host enforce a sandbox's egress policy, outside the sandbox
 * (nftables sets keyed by the slot address, the policy DNS resolver, the SNI/Host proxy). Core owns the
 * policy (validated, persisted in the store) and calls this port; the implementation owns no state that
 * cannot be rebuilt from `apply` calls.
 *
 * Lifecycle, per slot: core calls `apply` after the slot's network is attached and before the sandbox's
 * image is restored (create, fork child, resume), again whenever the policy changes (running and paused
 * sandboxes alike, no restart), and on daemon start for every live sandbox (reconcile); `remove` when the
 * sandbox lets the slot go (kill, failed create). Calls for one slot never overlap (core holds the sandbox's
 * lock). Cost: one `nft -f -` transaction plus in-memory resolver state; milliseconds.
 */
import type { EgressPolicy } from '../egress/policy.js';

export interface EgressEnforcer {
  /**
   * Make `policy` the one in force for the sandbox on `slot`, atomically: a packet sees the old policy or
   * the new one, never a mix. An empty policy (`rules: []`) is open egress. Connections to destinations no
   * longer allowed are cut. Idempotent. When it rejects, the policy in force must be the previous one.
   */
  apply(sandboxId: string, slot: number, policy: EgressPolicy): Promise<void>;
  /** Forget everything `apply` set up for `slot` (the next sandbox on it starts clean). A no-op when absent. */
  remove(slot: number): Promise<void>;
}
