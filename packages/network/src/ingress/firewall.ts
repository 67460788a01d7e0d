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
import { runChecked, run } from '../exec.js';
import { watchTable, type TableWatchOptions } from '../table-watch.js';

/** Marker on the rule; its presence means the table is installed. */
export const INGRESS_FIREWALL_MARKER = 'ramify-ingress-v1';

export interface IngressFirewallSpec {
  /** Network prefix: the table is `inet <prefix>_ingress`. */
  prefix: string;
  /** CIDR of every slot address. */
  slotRange: string;
  /** The only uid whose sockets may open connections to the slot range. */
  dialerUid: number;
}

/** The table's name. */
export const ingressTableName = (prefix: string): string => `${prefix}_ingress`;

/** The whole table (replaces an older one atomically). */
export function ingressTableScript(spec: IngressFirewallSpec): string {
  const t = ingressTableName(spec.prefix);
  return [
    `table inet ${t} {}`,
    `delete table inet ${t}`,
    `table inet ${t} {`,
    `  chain output { type filter hook output priority filter; policy accept;`,
    `    ip daddr ${spec.slotRange} ct state new meta skuid != ${spec.dialerUid} reject with icmpx admin-prohibited comment "${INGRESS_FIREWALL_MARKER}"`,
    `  }`,
    `}`,
  ].join('\n') + '\n';
}

/** Install (or replace) the ingress table. Rejects with nft's error. */
export async function installIngressFirewall(spec: IngressFirewallSpec): Promise<void> {
  await runChecked(['nft', '-f', '-'], ingressTableScript(spec));
}

/** True when the table is there with its rule (a flushed ruleset loses it). */
export async function ingressFirewallInstalled(prefix: string): Promise<boolean> {
  const r = await run(['nft', 'list', 'table', 'inet', ingressTableName(prefix)]);
  return r.code === 0 && r.stdout.includes(INGRESS_FIREWALL_MARKER);
}

/**
 * Re-install the table whenever it is gone (a `nft flush ruleset`, a hand-deleted table), checked when the
 * kernel reports a deletion (`table-watch.ts`), as the egress watchdog does for its table. Returns the function that stops it.
 */
export function watchIngressFirewall(spec: IngressFirewallSpec, options: TableWatchOptions = {}): () => void {
  return watchTable(async () => {
    if (await ingressFirewallInstalled(spec.prefix)) return false;
    await installIngressFirewall(spec);
    return true;
  }, options);
}

/** Remove the table (tests, `destroyAll`); no-op when absent. */
export async function removeIngressFirewall(prefix: string): Promise<void> {
  await run(['nft', 'delete', 'table', 'inet', ingressTableName(prefix)]);
}
