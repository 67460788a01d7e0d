/**
 * `SlotPolicies`: the slot → policy table. For each slot with a policy applied: the sandbox holding it,
 * its slot address, its egress policy, and the names the policy resolver answered it with each address.
 *
 * One writer, many readers. The enforcer (`nft/nft-egress-enforcer.ts`) writes it, inside its queue and
 * only once a change is in the kernel. Everything that asks about a source address or a slot reads it
 * through {@link SlotPolicyReader}: the policy DNS resolver (may this sandbox resolve a name), the SNI/Host
 * proxy (may it reach a name on a port), the egress log (which sandbox is this, which names did it
 * resolve to an address), and later the ingress proxy (which sandbox owns a slot). So the table is
 * constructed first and handed to all of them; none needs the enforcer to exist.
 */
import type { EgressPolicy } from '@ramify/core';
import { slotAddresses, type SlotLayout } from '../../slots.js';

/** A policy in force on one slot, for {@link SlotPolicies.set} and `NftEgressEnforcer.reapplyAll`. */
export interface SlotPolicy {
  sandboxId: string;
  slot: number;
  policy: EgressPolicy;
}

/** What the table knows about one slot. */
export interface SlotView {
  sandboxId: string;
  slot: number;
  slotAddress: string;
  policy: EgressPolicy;
  /** Names the sandbox resolved to `address` through the policy resolver (unexpired), most recently granted first. */
  namesFor(address: string): string[];
}

/** The slot → policy table, read-only: who holds a slot, at which address, under which policy. */
export interface SlotPolicyReader {
  /** The slot whose slot address is `slotAddress` (e.g. a packet's source address), or null. */
  slotByAddress(slotAddress: string): SlotView | null;
  /** Slot number `slot`, or null when no policy is applied to it. */
  slotByNumber(slot: number): SlotView | null;
  /** The slot `sandboxId` holds, or null when it holds none. */
  slotOfSandbox(sandboxId: string): SlotView | null;
}

interface SlotRecord extends SlotPolicy {
  slotAddress: string;
  /** Answered address → name → expiry (epoch ms): every name a granted address was answered for. */
  learned: Map<string, Map<string, number>>;
}

/** The table itself; the enforcer writes it, everything else gets it as a {@link SlotPolicyReader}. */
export class SlotPolicies implements SlotPolicyReader {
  /** The slot layout the table's slot addresses come from. */
  readonly layout: SlotLayout;
  private readonly slots = new Map<number, SlotRecord>();
  private readonly byAddress = new Map<string, number>();

  constructor(layout: SlotLayout) {
    this.layout = layout;
  }

  slotByAddress(slotAddress: string): SlotView | null {
    const slot = this.byAddress.get(slotAddress);
    return slot === undefined ? null : this.slotByNumber(slot);
  }

  slotByNumber(slot: number): SlotView | null {
    const record = this.slots.get(slot);
    return record ? viewOf(record) : null;
  }

  slotOfSandbox(sandboxId: string): SlotView | null {
    for (const record of this.slots.values()) if (record.sandboxId === sandboxId) return viewOf(record);
    return null;
  }

  /** The slot address of slot number `slot` in this table's layout (whether or not a policy is applied to it). */
  addressOf(slot: number): string {
    return slotAddresses(this.layout, slot).slotAddress;
  }

  /**
   * Put `entry` in force on its slot, replacing what the slot had. The names learned for the slot are kept
   * when the same sandbox keeps it (its DNS grants may outlive a policy change), and forgotten otherwise.
   */
  set(entry: SlotPolicy): void {
    const previous = this.slots.get(entry.slot);
    const next = this.recordOf(entry);
    if (previous?.sandboxId === entry.sandboxId) next.learned = previous.learned;
    if (previous) this.byAddress.delete(previous.slotAddress);
    this.remember(next);
  }

  /** Forget slot `slot` (no policy is applied to it any more). */
  delete(slot: number): void {
    const previous = this.slots.get(slot);
    if (!previous) return;
    this.slots.delete(slot);
    this.byAddress.delete(previous.slotAddress);
  }

  /** Replace every entry with `entries`; no learned name is kept. */
  replaceAll(entries: readonly SlotPolicy[]): void {
    this.slots.clear();
    this.byAddress.clear();
    for (const entry of entries) this.remember(this.recordOf(entry));
  }

  /** Record that `addresses` were answered to slot `slot` for `name` until `expiresAt` (epoch ms), and forget expired names. */
  learn(slot: number, name: string, addresses: readonly string[], expiresAt: number): void {
    const record = this.slots.get(slot);
    if (record) learnAnswer(record.learned, name, addresses, expiresAt);
  }

  /** Forget every learned name of every slot (when the DNS grants are gone, e.g. the table was re-installed). */
  forgetLearned(): void {
    for (const record of this.slots.values()) record.learned.clear();
  }

  private recordOf(entry: SlotPolicy): SlotRecord {
    return { sandboxId: entry.sandboxId, slot: entry.slot, policy: entry.policy, slotAddress: this.addressOf(entry.slot), learned: new Map() };
  }

  private remember(record: SlotRecord): void {
    this.slots.set(record.slot, record);
    this.byAddress.set(record.slotAddress, record.slot);
  }
}

function viewOf(record: SlotRecord): SlotView {
  const { sandboxId, slot, slotAddress, policy, learned } = record;
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

function learnAnswer(learned: SlotRecord['learned'], name: string, addresses: readonly string[], expiresAt: number): void {
  for (const address of addresses) learned.set(address, (learned.get(address) ?? new Map<string, number>()).set(name, expiresAt));
  const now = Date.now();
  for (const [address, names] of learned) {
    for (const [n, until] of names) if (until < now) names.delete(n);
    if (names.size === 0) learned.delete(address);
  }
}
