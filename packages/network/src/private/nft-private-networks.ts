/**
 * `NftPrivateNetworks`: core's {@link PrivateNetworkEnforcer} on the host's egress table. Two slots that
 * share a network are a pair in the table's `peers` set (both orders; see `nft-ruleset.ts`): the table
 * lets everything between them through and never redirects it, and checks both directions on every
 * packet, so taking a pair out cuts their open connections at once. Rule count is constant; a change of
 * one slot's networks is ONE `nft -f -` transaction (its pairs with the peers it gains and loses), run in
 * the egress enforcer's queue ({@link NftEgressEnforcer.exclusive}), so it never interleaves with a policy
 * change, and the pairs come back whenever that enforcer re-installs the table (`extraElements`: give it
 * {@link peerElements} of the same directory).
 *
 * Then the {@link NetworkDirectory} is updated (names resolve once the kernel allows the traffic, and stop
 * when it no longer does, give or take the DNS TTL the asker caches).
 */
import type { PrivateNetworkEnforcer, PrivateNetworkMembership } from '@ramify/core';
import type { TableCommit } from '../egress/nft/nft-egress-enforcer.js';
import { addElements, deleteElements, type SetElement } from '../egress/nft/nft-ruleset.js';
import type { NetworkDirectory } from './network-directory.js';

export interface NftPrivateNetworksOptions {
  /** Network prefix: the table is `inet <prefix>`. */
  prefix: string;
  directory: NetworkDirectory;
  /** The slot address of slot number `slot`. */
  addressOf(slot: number): string;
  /** Runs a change in the table owner's queue (the egress enforcer's `exclusive`). */
  exclusive<T>(change: (commit: TableCommit) => Promise<T>): Promise<T>;
}

/** The `peers` elements of one slot address with each of `peers`, both orders. */
export function pairElements(address: string, peers: Iterable<string>): SetElement[] {
  return [...peers].flatMap((peer): SetElement[] => [
    { set: 'peers', key: `${address} . ${peer}` },
    { set: 'peers', key: `${peer} . ${address}` },
  ]);
}

/** Every `peers` element the directory stands for (for a table (re-)install). */
export function peerElements(directory: NetworkDirectory): SetElement[] {
  return directory.pairs().map(([a, b]) => ({ set: 'peers', key: `${a} . ${b}` }));
}

export class NftPrivateNetworks implements PrivateNetworkEnforcer {
  private readonly options: NftPrivateNetworksOptions;

  constructor(options: NftPrivateNetworksOptions) {
    this.options = options;
  }

  apply(sandboxId: string, slot: number, memberships: readonly PrivateNetworkMembership[]): Promise<void> {
    const { directory, prefix } = this.options;
    return this.options.exclusive(async (commit) => {
      const address = this.options.addressOf(slot);
      const before = directory.peersOf(slot);
      const after = directory.peersWith(slot, memberships);
      const lost = [...before].filter((a) => !after.has(a));
      const gained = [...after].filter((a) => !before.has(a));
      await commit([...deleteElements(prefix, pairElements(address, lost)), ...addElements(prefix, pairElements(address, gained))]);
      if (memberships.length === 0) directory.delete(slot);
      else directory.set({ sandboxId, slot, slotAddress: address, memberships });
    });
  }

  remove(slot: number): Promise<void> {
    const { directory, prefix } = this.options;
    return this.options.exclusive(async (commit) => {
      const entry = directory.get(slot);
      if (!entry) return;
      await commit(deleteElements(prefix, pairElements(entry.slotAddress, directory.peersOf(slot))));
      directory.delete(slot);
    });
  }
}
