/**
 * TEST DOUBLE of the EgressEnforcer port: remembers which policy is in force on which slot and every
 * call, and fails on request. It enforces nothing; it proves core's calls, not the host's filtering.
 */
import type { EgressMode } from '@ramify/contracts';
import { formatEgressPolicy, type EgressPolicy } from '../egress/policy.js';
import type { EgressEnforcer } from '../ports/egress.js';

export class FakeEgressEnforcer implements EgressEnforcer {
  /** Calls, in order (`apply 3 sbx_1 pypi.org,10.0.0.0/8`, `apply 3 sbx_1 (deny-all)`, `remove 3`). */
  readonly calls: string[] = [];
  /** Slot → the sandbox, mode and canonical rules in force there. */
  readonly inForce = new Map<number, { sandboxId: string; mode: EgressMode; rules: string[] }>();
  /** When set, the next `apply` rejects with it (and changes nothing, as the port requires). */
  failNextApply: Error | null = null;

  async apply(sandboxId: string, slot: number, policy: EgressPolicy): Promise<void> {
    const rules = formatEgressPolicy(policy);
    this.calls.push(`apply ${slot} ${sandboxId} ${policy.mode === 'deny-all' ? '(deny-all)' : rules.join(',')}`);
    const failure = this.failNextApply;
    this.failNextApply = null;
    if (failure) throw failure;
    this.inForce.set(slot, { sandboxId, mode: policy.mode, rules });
  }

  async remove(slot: number): Promise<void> {
    this.calls.push(`remove ${slot}`);
    this.inForce.delete(slot);
  }

  /** The rules in force for `sandboxId` on whatever slot it holds, or undefined when none are. */
  rulesOf(sandboxId: string): string[] | undefined {
    return [...this.inForce.values()].find((e) => e.sandboxId === sandboxId)?.rules;
  }

  /** The mode in force for `sandboxId` on whatever slot it holds, or undefined when none is. */
  modeOf(sandboxId: string): EgressMode | undefined {
    return [...this.inForce.values()].find((e) => e.sandboxId === sandboxId)?.mode;
  }
}
