/**
 * TEST DOUBLE of the PrivateNetworkEnforcer port: remembers which networks are in force on which slot
 * and every call, and fails on request. It enforces nothing; it proves core's calls, not the host's filtering.
 */
import type { PrivateNetworkEnforcer, PrivateNetworkMembership } from '../ports/private-networks.js';

export class FakeNetworkEnforcer implements PrivateNetworkEnforcer {
  /** Calls, in order (`apply 3 sbx_1 n1:a,n2:b`, `apply 3 sbx_1 -`, `remove 3`). */
  readonly calls: string[] = [];
  /** Slot → the sandbox and its `network:alias` pairs in force there. */
  readonly inForce = new Map<number, { sandboxId: string; networks: string[] }>();
  /** When set, the next `apply` rejects with it (and changes nothing, as the port requires). */
  failNextApply: Error | null = null;

  async apply(sandboxId: string, slot: number, memberships: readonly PrivateNetworkMembership[]): Promise<void> {
    const networks = memberships.map((m) => `${m.network}:${m.alias}`);
    this.calls.push(`apply ${slot} ${sandboxId} ${networks.join(',') || '-'}`);
    const failure = this.failNextApply;
    this.failNextApply = null;
    if (failure) throw failure;
    this.inForce.set(slot, { sandboxId, networks });
  }

  async remove(slot: number): Promise<void> {
    this.calls.push(`remove ${slot}`);
    this.inForce.delete(slot);
  }

  /** The `network:alias` pairs in force for `sandboxId` on whatever slot it holds, or undefined when none is applied. */
  networksOf(sandboxId: string): string[] | undefined {
    return [...this.inForce.values()].find((e) => e.sandboxId === sandboxId)?.networks;
  }
}
