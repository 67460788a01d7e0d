/**
 * The agent channel's firewall: who may reach the agent's TCP port in a gVisor sandbox (the host's agent
 * channel, docs/design/RUNTIME-GVISOR.md "The agent channel"). One table of its own, `inet <prefix>_agent`:
 * - output hook: a NEW connection to the agent port at any slot address is rejected unless its socket
 *   belongs to the agent dialer's uid (an `IngressDialer` helper running as a uid no one else has,
 *   default {@link DEFAULT_AGENT_DIALER_UID}); the ingress's and the SSH gateway's dialer (another uid)
 *   included. The agent dialer reaches no other port of a slot.
 * - forward hook: nothing forwarded reaches the agent port at a slot address: not another sandbox (a
 *   peer on a private network, whose traffic the egress table accepts), not a host outside.
 * The ingress table lets the agent dialer's uid through (`IngressFirewallSpec.agentDialerUid`); nftables
 * accepts a packet only when every table's chain on the hook does, so either table alone keeps its rule.
 * Rejections make `connect()` fail at once (`EHOSTUNREACH`); forwarded packets are dropped.
 *
 * Constant rule count; `install` is one `nft -f -` transaction (create-if-missing, delete, define).
 */
import { installOwnedTable, ownedTableInstalled, removeOwnedTable, watchOwnedTable, type OwnedTable } from '../owned-table.js';
import type { TableWatchOptions } from '../table-watch.js';

/**
 * Default uid (and gid) of the agent dialer: next to the ingress dialer's (2147000000), in the range
 * systemd leaves unallocated, so no login user or container mapping has it.
 */
export const DEFAULT_AGENT_DIALER_UID = 2_147_000_001;

/** Marker on the rules; its presence means the table is installed. */
export const AGENT_FIREWALL_MARKER = 'ramify-agent-v1';

export interface AgentFirewallSpec {
  /** Network prefix: the table is `inet <prefix>_agent`. */
  prefix: string;
  /** CIDR of every slot address. */
  slotRange: string;
  /** The agent's TCP port inside every sandbox. */
  agentPort: number;
  /** The only uid whose sockets may open connections to that port. */
  dialerUid: number;
}

/** The table's name. */
export const agentTableName = (prefix: string): string => `${prefix}_agent`;

/** The whole table (replaces an older one atomically). */
export function agentTableScript(spec: AgentFirewallSpec): string {
  const t = agentTableName(spec.prefix);
  const { slotRange: range, agentPort: port, dialerUid: uid } = spec;
  const reject = `reject with icmpx admin-prohibited comment "${AGENT_FIREWALL_MARKER}"`;
  return [
    `table inet ${t} {}`,
    `delete table inet ${t}`,
    `table inet ${t} {`,
    `  chain output { type filter hook output priority filter; policy accept;`,
    `    ip daddr ${range} tcp dport ${port} ct state new meta skuid != ${uid} ${reject}`,
    `    ip daddr ${range} ct state new meta skuid ${uid} tcp dport != ${port} ${reject}`,
    `  }`,
    `  chain forward { type filter hook forward priority filter; policy accept;`,
    `    ip daddr ${range} tcp dport ${port} drop comment "${AGENT_FIREWALL_MARKER}"`,
    `  }`,
    `}`,
  ].join('\n') + '\n';
}

const owned = (spec: AgentFirewallSpec): OwnedTable => ({ name: agentTableName(spec.prefix), marker: AGENT_FIREWALL_MARKER, script: agentTableScript(spec) });

/** Install (or replace) the agent table. Rejects with nft's error. */
export const installAgentFirewall = (spec: AgentFirewallSpec): Promise<void> => installOwnedTable(owned(spec));

/** True when the table is there with its rules (a flushed ruleset loses it). */
export const agentFirewallInstalled = (prefix: string): Promise<boolean> => ownedTableInstalled(agentTableName(prefix), AGENT_FIREWALL_MARKER);

/** Re-install the table whenever it is gone (`table-watch.ts`, as the ingress and egress tables are). Returns the function that stops it. */
export const watchAgentFirewall = (spec: AgentFirewallSpec, options: TableWatchOptions = {}): (() => void) => watchOwnedTable(owned(spec), options);

/** Remove the table (tests, `destroyAll`); no-op when absent. */
export const removeAgentFirewall = (prefix: string): Promise<void> => removeOwnedTable(agentTableName(prefix));
