export { PolicyDnsResolver } from './dns-resolver.js';
export type {
  DnsAnswerEvent, DnsDeniedEvent, DnsDroppedAddressesEvent, DnsErrorSource, DnsPolicyVerdict, DnsResolverStats,
  DnsSandboxPolicy, PolicyDnsResolverOptions,
} from './dns-resolver-types.js';
export type { DnsUpstream } from './dns-upstream.js';
export { DEFAULT_BLOCKED_RANGES, ipv4RangeSet, type Ipv4RangeSet } from './address-ranges.js';
export { EMPTY_ANSWER_TYPES, filterAnswer, type FilteredAnswer, type TtlRange } from './dns-filter.js';
export * from './egress-proxy.js';
export { NftEgressEnforcer, type HostFirewall, type NftEgressEnforcerOptions, type SlotPolicy } from './nft-egress-enforcer.js';
export { startHostEgress, hostNameservers, type HostEgress, type HostEgressErrorSource, type HostEgressOptions } from './host-egress.js';
export { ALWAYS_BLOCKED, NFLOG_KINDS, nflogGroupFor, tableScript, policyElements, type EgressTableSpec, type SetElement } from './nft-ruleset.js';
export { matchConnection, nameMatches, type ConnectionFacts, type RuleMatch } from './policy-match.js';
export type { SlotView } from './slot-views.js';
export { UpstreamNameResolver, type UpstreamNameResolverOptions } from './upstream-name-resolver.js';
export { NflogReader, parseNflogLine, type NflogPacket, type NflogReaderOptions } from './nflog-reader.js';
export { EgressVerdicts, type EgressVerdictsOptions, type SlotLookup } from './egress-verdicts.js';
export { ROUTE_GUARD_MARK, removeRouteGuard } from './route-guard.js';
