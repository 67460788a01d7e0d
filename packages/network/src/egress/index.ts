export { PolicyDnsResolver } from './dns/dns-resolver.js';
export type {
  DnsAnswerEvent, DnsDeniedEvent, DnsDroppedAddressesEvent, DnsFailedEvent, DnsErrorSource, DnsPolicyVerdict, DnsResolverStats,
  DnsSandboxPolicy, PolicyDnsResolverOptions,
} from './dns/dns-resolver-types.js';
export type { DnsUpstream } from './dns/dns-upstream.js';
export { DEFAULT_BLOCKED_RANGES, ipv4RangeSet, type Ipv4RangeSet } from './policy/address-ranges.js';
export { EMPTY_ANSWER_TYPES, filterAnswer, type FilteredAnswer, type TtlRange } from './dns/dns-filter.js';
export * from './proxy/egress-proxy.js';
export { NftEgressEnforcer, type HostFirewall, type NftEgressEnforcerOptions } from './nft/nft-egress-enforcer.js';
export { startHostEgress, hostNameservers, type HostEgress, type HostEgressErrorSource, type HostEgressOptions } from './host-egress.js';
export { ALWAYS_BLOCKED, NFLOG_KINDS, nflogGroupFor, tableScript, policyElements, type EgressTableSpec, type SetElement } from './nft/nft-ruleset.js';
export { matchConnection, nameMatches, type ConnectionFacts, type RuleMatch } from './policy/policy-match.js';
export { SlotPolicies, type SlotPolicy, type SlotPolicyReader, type SlotView } from './policy/slot-policies.js';
export { UpstreamNameResolver, type UpstreamNameResolverOptions } from './dns/upstream-name-resolver.js';
export { NflogReader, parseNflogLine, type NflogPacket, type NflogReaderOptions } from './nft/nflog-reader.js';
export { EgressVerdicts, type EgressVerdictsOptions, type SlotLookup } from './proxy/egress-verdicts.js';
export { ROUTE_GUARD_MARK, removeRouteGuard } from './nft/route-guard.js';
