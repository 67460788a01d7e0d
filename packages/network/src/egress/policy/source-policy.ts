/**
 * What the policy DNS resolver and the SNI/Host proxy read of the slot → policy table: the sandbox behind
 * a source address, with a verdict function bound to its policy (their `sandboxForSource` and
 * `policyForSource`). Each says which rule decides; the mode is handled here the same for both.
 */
import { formatEgressRule, type EgressPolicy, type EgressRule } from '@ramify/core';
import type { SlotPolicyReader } from './slot-policies.js';

/** A policy's verdict on one name (and port); `rule` is the rule that decided (canonical spelling), for the log. */
export interface SourceVerdict {
  allowed: boolean;
  rule: string | null;
}

/** The sandbox behind a source address and its verdicts; `A` is what a verdict is asked about (a name, a name and a port). */
export interface SourcePolicy<A extends unknown[]> {
  sandboxId: string;
  allow(...query: A): SourceVerdict;
}

/**
 * The sandbox holding the slot at `address`, or null for an unknown source. Its `allow` allows everything
 * in open mode (rule null); otherwise what `decide` finds the rule for, so deny-all (no rules) allows nothing.
 */
export function policyAtSource<A extends unknown[]>(
  slots: Pick<SlotPolicyReader, 'slotByAddress'>,
  address: string,
  decide: (policy: EgressPolicy, ...query: A) => EgressRule | null,
): SourcePolicy<A> | null {
  const slot = slots.slotByAddress(address);
  if (!slot) return null;
  const { sandboxId, policy } = slot;
  return {
    sandboxId,
    allow: (...query) => {
      if (policy.mode === 'open') return { allowed: true, rule: null };
      const rule = decide(policy, ...query);
      return rule ? { allowed: true, rule: formatEgressRule(rule) } : { allowed: false, rule: null };
    },
  };
}
