/**
 * Which rule of a policy allows one connection: the enforcement side's port-aware matching, used by
 * the SNI/Host proxy (name + port) and by the egress log (address + port + names learned from DNS).
 * Pure functions over a parsed {@link EgressPolicy}; name matching is core's (`host` equal, `*.suffix`
 * strictly below), ports and addresses are matched here the way the nftables sets match them.
 */
import type { EgressPolicy, EgressRule, PortRange } from '@ramify/core';

/** What is known about one connection attempt. */
export interface ConnectionFacts {
  /** Destination IPv4 address (dotted quad); absent when only a name is known (the proxy). */
  address?: string;
  /**
   * Destination port; null for a protocol without ports (ICMP): only rules without a port match it,
   * as in the firewall, where port rules apply to TCP and UDP only.
   */
  port: number | null;
  /** Names the destination goes by: the SNI/Host, or the names the sandbox resolved to `address`. */
  names: readonly string[];
}

/** The rule that matched and, for a name rule, the name it matched through. */
export interface RuleMatch {
  rule: EgressRule;
  name: string | null;
}

/**
 * The first rule of `policy` (in order) that allows the connection, or null. `*` matches anything; an
 * address or network rule matches `facts.address`; a host or wildcard rule matches one of `facts.names`;
 * a rule with a port also needs `facts.port` in its range. An empty policy (open egress) matches
 * nothing: callers treat open mode themselves.
 */
export function matchConnection(policy: EgressPolicy, facts: ConnectionFacts): RuleMatch | null {
  const address = facts.address === undefined ? null : toInt(facts.address);
  for (const rule of policy.rules) {
    if (rule.kind === 'any') return { rule, name: null };
    if (!portMatches(rule.port, facts.port)) continue;
    if (rule.kind === 'ip' && address !== null && toInt(rule.address) === address) return { rule, name: null };
    if (rule.kind === 'cidr' && address !== null && inNetwork(address, rule.network, rule.prefix)) return { rule, name: null };
    if (rule.kind === 'host' || rule.kind === 'wildcard') {
      const name = facts.names.find((n) => nameMatches(rule, n));
      if (name !== undefined) return { rule, name };
    }
  }
  return null;
}

/** True when `name` (lowercase ASCII, no trailing dot) is the rule's host or lies strictly below its wildcard suffix. */
export function nameMatches(rule: Extract<EgressRule, { kind: 'host' | 'wildcard' }>, name: string): boolean {
  return rule.kind === 'host' ? rule.host === name : name.endsWith(`.${rule.suffix}`);
}

function portMatches(range: PortRange | null, port: number | null): boolean {
  if (range === null) return true;
  return port !== null && range.from <= port && port <= range.to;
}

function inNetwork(address: number, network: string, prefix: number): boolean {
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return ((address & mask) >>> 0) === toInt(network);
}

const toInt = (ip: string): number => ip.split('.').reduce((acc, part) => acc * 256 + Number(part), 0) >>> 0;
