/**
 * The EgressEnforcer port: makes the host enforce a sandbox's egress policy, outside the sandbox
 * (nftables sets keyed by the slot address, the policy DNS resolver, the SNI/Host proxy). Core owns the
 * policy (validated, persisted in the store) and calls this port; the implementation owns no state that
 * cannot be rebuilt from `apply` calls.
 *
 * Lifecycle, per slot: core calls `apply` after the slot's network is attached, while the sandbox's image
 * is restored and before its agent is reached (create, fork child, resume; so an implementation must drop
 * every packet of a slot it holds no policy for), again whenever the policy changes (running and paused
 * sandboxes alike, no restart), and on daemon start for every live sandbox (reconcile); `remove` when the
 * sandbox lets the slot go (kill, failed create). Calls for one slot never overlap (core holds the sandbox's
 * lock). Cost: one `nft -f -` transaction plus in-memory resolver state; milliseconds.
 */
import type { EgressLogEntry } from '@ramify/contracts';
import type { EgressPolicy } from '../egress/policy.js';

export interface EgressEnforcer {
  /**
   * Make `policy` the one in force for the sandbox on `slot`, atomically: a packet sees the old policy or
   * the new one, never a mix. `mode` decides: `open` lets everything out but what is always closed,
   * `allowlist` only what a rule allows, `deny-all` nothing at all (no name resolves, no packet leaves).
   * Connections to destinations no longer allowed are cut. Idempotent. When it rejects, the policy in
   * force must be the previous one.
   */
  apply(sandboxId: string, slot: number, policy: EgressPolicy): Promise<void>;
  /** Forget everything `apply` set up for `slot` (the next sandbox on it starts clean). A no-op when absent. */
  remove(slot: number): Promise<void>;
}

/**
 * One verdict host enforcement recorded for a sandbox: an allowed or denied connection (from the nftables
 * log, the SNI/Host proxy) or a DNS name the policy resolver answered or refused. It is what
 * `GET /v1/sandboxes/{id}/egress/log` returns, plus whose it is. `sandboxId` is the sandbox that held the
 * slot when the packet was seen (a fork has its own slot, hence its own log).
 */
export interface EgressVerdict extends EgressLogEntry {
  sandboxId: string;
}

/**
 * Where enforcement reports {@link EgressVerdict}s. The implementation keeps a bounded log per sandbox
 * (oldest entries dropped first) and must not throw or block the packet path: `record` is fire-and-forget.
 */
export interface EgressLogSink {
  record(verdict: EgressVerdict): void;
}
