/**
 * `NetworkDirectory`: which slot is on which private network under which alias, in memory. One writer,
 * many readers: {@link NftPrivateNetworks} writes it, once a change is in the kernel; the policy DNS
 * resolver (`internal-zone.ts`: `<alias>.<network>.internal`, answered only to members) and the egress
 * log (which network let two sandboxes talk) read it through {@link NetworkDirectoryReader}.
 *
 * Peers: two slots are peers while they share at least one network. A slot's peers are computed from the
 * networks' member lists (cost: the sum of its networks' sizes).
 */
import type { PrivateNetworkMembership } from '@ramify/core';

/** What one slot is on. */
export interface SlotMemberships {
  sandboxId: string;
  slot: number;
  slotAddress: string;
  memberships: readonly PrivateNetworkMembership[];
}

/** The directory, read-only. */
export interface NetworkDirectoryReader {
  /**
   * The address of the member called `alias` on `network`, when the slot at `askerAddress` is on that
   * network too; otherwise null (the asker is on no such network, or nobody there has the alias).
   */
  resolve(askerAddress: string, alias: string, network: string): string | null;
  /** The first network (in `a`'s joining order) both slot addresses are on, or null. */
  sharedNetwork(a: string, b: string): string | null;
  /** The `<alias>.<network>.internal` of the slot at `address` on `network`, or null when it is not on it. */
  hostnameOn(address: string, network: string): string | null;
}

export class NetworkDirectory implements NetworkDirectoryReader {
  private readonly bySlot = new Map<number, SlotMemberships>();
  private readonly byAddress = new Map<string, number>();
  /** Network name → alias → slot. */
  private readonly byNetwork = new Map<string, Map<string, number>>();

  get(slot: number): SlotMemberships | null {
    return this.bySlot.get(slot) ?? null;
  }

  /** Replace what `entry.slot` is on. */
  set(entry: SlotMemberships): void {
    this.delete(entry.slot);
    const copy = { ...entry, memberships: entry.memberships.map((m) => ({ ...m })) };
    this.bySlot.set(entry.slot, copy);
    this.byAddress.set(entry.slotAddress, entry.slot);
    for (const m of copy.memberships) {
      const aliases = this.byNetwork.get(m.network) ?? new Map<string, number>();
      aliases.set(m.alias, entry.slot);
      this.byNetwork.set(m.network, aliases);
    }
  }

  /** Forget `slot` (no-op when absent). */
  delete(slot: number): void {
    const previous = this.bySlot.get(slot);
    if (!previous) return;
    this.bySlot.delete(slot);
    this.byAddress.delete(previous.slotAddress);
    for (const m of previous.memberships) {
      const aliases = this.byNetwork.get(m.network);
      if (aliases?.get(m.alias) === slot) aliases.delete(m.alias);
      if (aliases?.size === 0) this.byNetwork.delete(m.network);
    }
  }

  /**
   * The slot addresses `slot` would share a network with if it were on `memberships` (itself excluded),
   * whatever it is on now.
   */
  peersWith(slot: number, memberships: readonly Pick<PrivateNetworkMembership, 'network'>[]): Set<string> {
    const peers = new Set<string>();
    for (const m of memberships) {
      for (const other of this.byNetwork.get(m.network)?.values() ?? []) {
        const entry = other === slot ? undefined : this.bySlot.get(other);
        if (entry) peers.add(entry.slotAddress);
      }
    }
    return peers;
  }

  /** The slot addresses `slot` shares a network with now. */
  peersOf(slot: number): Set<string> {
    return this.peersWith(slot, this.bySlot.get(slot)?.memberships ?? []);
  }

  /** Every pair of peers, each in both orders (what the table's `peers` set holds). */
  pairs(): Array<[string, string]> {
    const out: Array<[string, string]> = [];
    for (const entry of this.bySlot.values()) for (const peer of this.peersOf(entry.slot)) out.push([entry.slotAddress, peer]);
    return out;
  }

  resolve(askerAddress: string, alias: string, network: string): string | null {
    const asker = this.memberAt(askerAddress);
    if (!asker?.memberships.some((m) => m.network === network)) return null;
    const slot = this.byNetwork.get(network)?.get(alias);
    return slot === undefined ? null : (this.bySlot.get(slot)?.slotAddress ?? null);
  }

  sharedNetwork(a: string, b: string): string | null {
    const left = this.memberAt(a);
    const right = this.memberAt(b);
    if (!left || !right) return null;
    return left.memberships.find((m) => right.memberships.some((r) => r.network === m.network))?.network ?? null;
  }

  hostnameOn(address: string, network: string): string | null {
    const m = this.memberAt(address)?.memberships.find((x) => x.network === network);
    return m ? `${m.alias}.${m.network}.internal` : null;
  }

  private memberAt(address: string): SlotMemberships | null {
    const slot = this.byAddress.get(address);
    return slot === undefined ? null : (this.bySlot.get(slot) ?? null);
  }
}
