/**
 * The SandboxNetwork port: each sandbox lives in its own network namespace. Every sandbox namespace
 * has the same guest address (so a restored fork keeps working unchanged); a router namespace per
 * sandbox maps it to a unique host-side *slot* address, which is what host nftables see.
 */
export interface NetworkAttachment {
  /** Slot number, unique among live sandboxes. */
  slot: number;
  /** Path of the sandbox's network namespace, e.g. `/var/run/netns/rmf-s12`. */
  netnsPath: string;
  /** Name of the namespace (for `ip -n`). */
  netnsName: string;
  /** The guest's address inside its namespace (same for every sandbox). */
  guestAddress: string;
  /** Unique address of this sandbox as seen by the host. */
  slotAddress: string;
}

export interface SandboxNetwork {
  /**
   * Create (or repair, idempotently) the namespaces, veths and NAT for `slot` and return the attachment.
   * Must be called before every restore: the runtime may strip the guest address from the interface.
   */
  attach(sandboxId: string, slot: number): Promise<NetworkAttachment>;
  /** Remove everything `attach` made for `slot`; a no-op when absent. */
  detach(slot: number): Promise<void>;
  /**
   * Remove the slot's namespaces if `unused()` still says so, asked while no attach of that slot can run
   * (for shrinking the warm pool without racing a create that was just handed the slot).
   */
  detachIfUnused(slot: number, unused: () => Promise<boolean>): Promise<void>;
  /** Slots that have namespaces on this host (for reconcile). */
  listSlots(): Promise<number[]>;
  /**
   * Prepare the namespaces of `slots` in the background so that a later `attach` of one of them only
   * checks and repairs (~5 ms instead of ~60-600 ms under load). Never rejects; a failed prewarm
   * leaves `attach` to build the slot as usual.
   */
  prewarm(slots: number[]): void;
  /**
   * Optional, cheap (two file reads, no process spawned; core's usage sampler calls it for each running
   * sandbox): bytes that crossed the slot's link since its interface was made, from the sandbox's side:
   * `inBytes` received by the sandbox, `outBytes` sent by it. Null when the slot has no link.
   */
  trafficBytes?(slot: number): Promise<SlotTraffic | null>;
  /**
   * The runtime instance on `slot` has stopped and the slot is kept (a pause): put back, in the background,
   * what the next restore needs in it (the guest address the runtime took over), so that the next `attach`
   * of the slot need not check. Never rejects; `attach` repairs as usual when this did not happen.
   */
  prepareGuest?(slot: number): void;
}

/** Byte counters of a slot's link, from the sandbox's side (they start at 0 when the link is made). */
export interface SlotTraffic {
  inBytes: number;
  outBytes: number;
}
