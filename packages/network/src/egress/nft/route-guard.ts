/**
 * The route guard: egress fails closed when the host's egress table (`inet <prefix>`) is missing, e.g.
 * deleted or flushed (`nft flush ruleset`) while the daemon is down and its watchdog cannot re-install it.
 * Two policy-routing rules per network prefix (routing rules are not nftables state: a flush leaves them):
 *
 *   pref 1500  from <slot range> to <slot range> iif lo lookup main   the host's own packets to slots
 *   pref 1501  from <slot range> fwmark 0/<mark> prohibit               slot traffic the table did not mark
 *
 * The table's `guard` chain (prerouting hook, so before the routing decision) ORs `mark` into every packet
 * arriving on a slot veth; its filter chains still decide allow/deny. Without the table nothing sets the mark,
 * and every forwarded packet from the slot range is refused by routing (ICMP "administratively prohibited"
 * back to the sandbox): nothing reaches the world, whatever the protocol or destination.
 *
 * - The first rule is needed because a locally generated packet's route is chosen by its socket before any
 *   output hook could mark it: the proxy's and the resolver's TCP SYN-ACKs (source: the host veth address,
 *   in the slot range) would be refused. `iif lo` matches only locally generated packets, never forwarded ones.
 * - The rules match by source address; that every packet arriving on a slot veth carries its slot address is
 *   ensured outside the host's nftables, by the router namespace's anti-spoofing (`NamespaceNetwork`).
 * - Conntrack replies to a sandbox have their destination in the range, not their source: not affected.
 * - Limit: packets to the host's OWN addresses are delivered by the kernel's `local` rule (preference 0, before
 *   any rule that can be added), so with the table gone a slot can reach services listening on the host itself
 *   (not beyond it) until the table is back.
 */
import { RamifyError } from '@ramify/contracts';
import { run, runChecked } from '../../exec.js';

/**
 * Default mark bit (bit 29). Chosen clear of the marks common host software uses: kube-proxy 0x4000/0x8000,
 * Cilium 0x0f00, Tailscale 0xff0000, netavark 0x2000, Istio 0x539, wg-quick 0xca6c, Calico's lowest mask bits
 * 0x10000-0x80000. The table ORs the bit in and leaves every other bit alone.
 */
export const ROUTE_GUARD_MARK = 0x20000000;

/** Preferences of the two rules: early, clear of local (0), VRF (1000), Tailscale (5210-5270), main (32766). */
export const ROUTE_GUARD_PREFERENCES = { host: 1500, guard: 1501 } as const;

/** What the guard covers. */
export interface RouteGuardSpec {
  /** CIDR of every slot address (`slotRange(layout)`), e.g. `10.253.0.0/16`. */
  slotRange: string;
  /** A single bit; default {@link ROUTE_GUARD_MARK}. */
  mark?: number;
}

/** One rule of `ip -4 -j rule show` (the fields the guard looks at). */
export interface IpRuleJson {
  priority: number;
  src?: string;
  srclen?: number;
  dst?: string;
  dstlen?: number;
  iif?: string;
  fwmark?: string;
  fwmask?: string;
  table?: string;
  action?: string;
}

/** argv (after `ip -4 rule add`) of the two rules, host exemption first. */
export function routeGuardRuleArgs(spec: RouteGuardSpec): { host: string[]; guard: string[] } {
  const mark = markOf(spec);
  return {
    host: ['pref', String(ROUTE_GUARD_PREFERENCES.host), 'from', spec.slotRange, 'to', spec.slotRange, 'iif', 'lo', 'lookup', 'main'],
    guard: ['pref', String(ROUTE_GUARD_PREFERENCES.guard), 'from', spec.slotRange, 'fwmark', `0/0x${mark.toString(16)}`, 'prohibit'],
  };
}

/** The rules at the guard's preferences whose source is `slotRange` (ours, and any stale or duplicate ones). */
export function guardRulesIn(rules: readonly IpRuleJson[], slotRange: string): IpRuleJson[] {
  const [network, bits] = slotRange.split('/');
  const prefs: number[] = Object.values(ROUTE_GUARD_PREFERENCES);
  return rules.filter((r) => prefs.includes(r.priority) && r.src === network && r.srclen === Number(bits));
}

/** True when `rules` hold exactly the guard of `spec`: one host rule, one guard rule, nothing else of ours. */
export function isExactGuard(rules: readonly IpRuleJson[], spec: RouteGuardSpec): boolean {
  const ours = guardRulesIn(rules, spec.slotRange);
  return ours.length === 2 && isHostRule(ours, spec) && isGuardRule(ours, spec);
}

/** The current IPv4 routing rules. Rejects `RUNTIME_ERROR` when `ip` fails. */
export async function listIpRules(): Promise<IpRuleJson[]> {
  return JSON.parse(await runChecked(['ip', '-4', '-j', 'rule', 'show'])) as IpRuleJson[];
}

/** The guard rules in force for `slotRange` (for checks and tests). */
export async function listRouteGuard(slotRange: string): Promise<IpRuleJson[]> {
  return guardRulesIn(await listIpRules(), slotRange);
}

/** True when exactly the guard of `spec` is in force. */
export async function isRouteGuardInstalled(spec: RouteGuardSpec): Promise<boolean> {
  return isExactGuard(await listIpRules(), spec);
}

/**
 * Add the guard's rules where missing (idempotent: a restart never stacks duplicates); a rule of ours that is
 * duplicated or has another shape (e.g. another mark) is replaced. The host rule goes first, so that the host's
 * replies to slots are never refused. Rejects `RUNTIME_ERROR` naming the rule that could not be added.
 */
export async function installRouteGuard(spec: RouteGuardSpec): Promise<void> {
  const ours = guardRulesIn(await listIpRules(), spec.slotRange);
  const args = routeGuardRuleArgs(spec);
  const steps = [
    { pref: ROUTE_GUARD_PREFERENCES.host, argv: args.host, ok: isHostRule(ours, spec) },
    { pref: ROUTE_GUARD_PREFERENCES.guard, argv: args.guard, ok: isGuardRule(ours, spec) },
  ];
  for (const step of steps) {
    const atPref = ours.filter((r) => r.priority === step.pref);
    if (step.ok && atPref.length === 1) continue;
    await deleteAt(step.pref, spec.slotRange, atPref.length);
    const r = await run(['ip', '-4', 'rule', 'add', ...step.argv]);
    if (r.code !== 0) throw new RamifyError('RUNTIME_ERROR', `the egress route guard rule 'ip rule add ${step.argv.join(' ')}' could not be added: ${r.stderr.trim()}`);
  }
}

/** Remove every guard rule for `slotRange` (the guard rule first). Never rejects for a missing rule. */
export async function removeRouteGuard(slotRange: string): Promise<void> {
  const ours = guardRulesIn(await listIpRules(), slotRange);
  for (const pref of [ROUTE_GUARD_PREFERENCES.guard, ROUTE_GUARD_PREFERENCES.host]) {
    await deleteAt(pref, slotRange, ours.filter((r) => r.priority === pref).length);
  }
}

/** Delete `count` rules at `pref` with source `slotRange` (`ip rule del` removes the first match each time). */
async function deleteAt(pref: number, slotRange: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await run(['ip', '-4', 'rule', 'del', 'pref', String(pref), 'from', slotRange]);
}

function markOf(spec: RouteGuardSpec): number {
  const mark = spec.mark ?? ROUTE_GUARD_MARK;
  if (!Number.isInteger(mark) || mark <= 0 || mark > 0xffffffff || (mark & (mark - 1)) !== 0) throw new RangeError(`route guard mark ${mark} must be a single bit`);
  return mark;
}

function isHostRule(ours: readonly IpRuleJson[], spec: RouteGuardSpec): boolean {
  const [network, bits] = spec.slotRange.split('/');
  return ours.some((r) => r.priority === ROUTE_GUARD_PREFERENCES.host && r.dst === network && r.dstlen === Number(bits) && r.iif === 'lo' && r.table === 'main' && r.action === undefined && r.fwmask === undefined);
}

function isGuardRule(ours: readonly IpRuleJson[], spec: RouteGuardSpec): boolean {
  return ours.some((r) => r.priority === ROUTE_GUARD_PREFERENCES.guard && r.dst === undefined && r.iif === undefined && r.action === 'prohibit' && Number(r.fwmark) === 0 && Number(r.fwmask) === markOf(spec));
}
