/**
 * The ingress firewall: who on the host may open a connection to a sandbox. Today's slot plumbing lets any
 * host process reach a guest port at its slot address (the router namespace DNATs it to the guest), so
 * the ingress adds one table of its own, `inet <prefix>_ingress`, with one rule on the host's output hook:
 * a NEW connection to the slot range is rejected (ICMP admin-prohibited: the connect fails at once with
 * EHOSTUNREACH, rather than hanging) unless its socket belongs to the ingress dialer's user
 * ({@link IngressDialer}: a helper process running as a uid no one else on the host has). Replies (the
 * policy resolver's answers, the egress proxy's) are not NEW and pass; other sandboxes never reach a slot
 * (the egress table's forward chain denies the slot range as a destination). The egress table is not
 * changed: replies to the dialer's connections are accepted by its `slot_input` chain (`ct direction
 * reply`), and forwarded traffic is untouched, so no egress rule is weakened.
 *
 * Constant rule count; `install` is one `nft -f -` transaction (create-if-missing, delete, define).
 */
import { installOwnedTable, ownedTableInstalled, removeOwnedTable, watchOwnedTable, type OwnedTable } from '../owned-table.js';
import type { TableWatchOptions } from '../table-watch.js';

/** Marker on the rule; its presence means the table is installed. */
export const INGRESS_FIREWALL_MARKER = 'ramify-ingress-v1';

export interface IngressFirewallSpec {
  /** Network prefix: the table is `inet <prefix>_ingress`. */
  prefix: string;
  /** CIDR of every slot address. */
  slotRange: string;
  /** The only uid whose sockets may open connections to the slot range. */
  dialerUid: number;
  /**
   * The agent channel's dialer, let through too: its own table (`agent-channel/firewall.ts`) limits it to
   * the agent's port and keeps every other uid, this dialer's included, off that port.
   */
  agentDialerUid?: number;
}

/** The table's name. */
export const ingressTableName = (prefix: string): string => `${prefix}_ingress`;

/** The whole table (replaces an older one atomically). */
export function ingressTableScript(spec: IngressFirewallSpec): string {
  const t = ingressTableName(spec.prefix);
  const uids = spec.agentDialerUid === undefined ? `${spec.dialerUid}` : `{ ${spec.dialerUid}, ${spec.agentDialerUid} }`;
  return [
    `table inet ${t} {}`,
    `delete table inet ${t}`,
    `table inet ${t} {`,
    `  chain output { type filter hook output priority filter; policy accept;`,
    `    ip daddr ${spec.slotRange} ct state new meta skuid != ${uids} reject with icmpx admin-prohibited comment "${INGRESS_FIREWALL_MARKER}"`,
    `  }`,
    `}`,
  ].join('\n') + '\n';
}

const owned = (spec: IngressFirewallSpec): OwnedTable => ({ name: ingressTableName(spec.prefix), marker: INGRESS_FIREWALL_MARKER, script: ingressTableScript(spec) });

/** Install (or replace) the ingress table. Rejects with nft's error. */
export const installIngressFirewall = (spec: IngressFirewallSpec): Promise<void> => installOwnedTable(owned(spec));

/** True when the table is there with its rule (a flushed ruleset loses it). */
export const ingressFirewallInstalled = (prefix: string): Promise<boolean> => ownedTableInstalled(ingressTableName(prefix), INGRESS_FIREWALL_MARKER);

/**
 * Re-install the table whenever it is gone (a `nft flush ruleset`, a hand-deleted table), checked when the
 * kernel reports a deletion (`table-watch.ts`), as the egress watchdog does for its table. Returns the function that stops it.
 */
export const watchIngressFirewall = (spec: IngressFirewallSpec, options: TableWatchOptions = {}): (() => void) => watchOwnedTable(owned(spec), options);

/** Remove the table (tests, `destroyAll`); no-op when absent. */
export const removeIngressFirewall = (prefix: string): Promise<void> => removeOwnedTable(ingressTableName(prefix));
