/**
 * Read-only views of one slot's enforcement state, for the parts that ask the enforcer about a source
 * address: the policy DNS resolver (may this sandbox resolve a name), the SNI/Host proxy (may it reach a
 * name on a port) and the egress log (which sandbox is this, which names did it resolve to an address).
 */
import { formatEgressRule, ruleForName, type EgressPolicy } from '@ramify/core';
import type { DnsSandboxPolicy } from '../dns/dns-resolver-types.js';
import type { EgressProxySandbox } from '../proxy/egress-proxy-types.js';
import { matchConnection } from './policy-match.js';

/** The part of the enforcer's per-slot state the views read. */
export interface SlotRecord {
  sandboxId: string;
  slot: number;
  slotAddress: string;
  policy: EgressPolicy;
  /** Answered address → name → expiry (epoch ms): every name a granted address was answered for. */
  learned: Map<string, Map<string, number>>;
}

/** What the enforcer knows about one slot (for the egress log). */
export interface SlotView {
  sandboxId: string;
  slot: number;
  slotAddress: string;
  policy: EgressPolicy;
  /** Names the sandbox resolved to `address` through the policy resolver (unexpired), most recently granted first. */
  namesFor(address: string): string[];
}

/** The resolver's view: a name is allowed by the first `*`/host/wildcard rule naming it (ports play no part); open mode allows every name, deny-all none. */
export function dnsPolicyOf(state: SlotRecord): DnsSandboxPolicy {
  const { sandboxId, policy } = state;
  return {
    sandboxId,
    allow: (name) => {
      if (policy.mode === 'open') return { allowed: true, rule: null };
      const rule = ruleForName(policy, name);
      return rule ? { allowed: true, rule: formatEgressRule(rule) } : { allowed: false, rule: null };
    },
  };
}

/**
 * The proxy's view: a name is allowed on a port by the first `*`/host/wildcard rule naming it with that
 * port (or without a port); address rules never allow a name. Open egress allows everything (rule null),
 * deny-all nothing.
 */
export function proxyPolicyOf(state: SlotRecord): EgressProxySandbox {
  const { sandboxId, policy } = state;
  return {
    sandboxId,
    allow: (name, port) => {
      if (policy.mode === 'open') return { allowed: true, rule: null };
      const match = matchConnection(policy, { port, names: [name] });
      return match ? { allowed: true, rule: formatEgressRule(match.rule) } : { allowed: false, rule: null };
    },
  };
}

export function slotViewOf(state: SlotRecord): SlotView {
  const { sandboxId, slot, slotAddress, policy, learned } = state;
  return {
    sandboxId,
    slot,
    slotAddress,
    policy,
    namesFor: (address) => {
      const names = learned.get(address);
      if (!names) return [];
      const now = Date.now();
      return [...names].filter(([, until]) => until > now).sort((x, y) => y[1] - x[1]).map(([name]) => name);
    },
  };
}

/** Record that `addresses` were answered for `name` until `expiresAt`, and forget expired names. */
export function learnAnswer(learned: SlotRecord['learned'], name: string, addresses: readonly string[], expiresAt: number): void {
  for (const address of addresses) learned.set(address, (learned.get(address) ?? new Map<string, number>()).set(name, expiresAt));
  const now = Date.now();
  for (const [address, names] of learned) {
    for (const [n, until] of names) if (until < now) names.delete(n);
    if (names.size === 0) learned.delete(address);
  }
}
