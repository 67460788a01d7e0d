/**
 * Vocabulary of the policy DNS resolver: what it asks the daemon (who is asking, may they ask for this
 * name) and what it tells it (answered addresses, denied names, dropped addresses, statistics).
 */
import type { DnsUpstream } from './dns-upstream.js';
import type { TtlRange } from './dns-filter.js';

/** The policy's verdict on one name; `rule` is the rule that decided, for the egress log. */
export interface DnsPolicyVerdict {
  allowed: boolean;
  rule: string | null;
}

/** The sandbox behind a source address, and its name policy. */
export interface DnsSandboxPolicy {
  sandboxId: string;
  /** Verdict for a normalized name (lower case, no trailing dot, plain hostname characters). */
  allow(name: string): DnsPolicyVerdict;
}

/** Addresses about to be handed to a sandbox; the reply waits until the hook resolves. */
export interface DnsAnswerEvent {
  sandboxId: string;
  /** The name asked (normalized), not the CNAME targets. */
  name: string;
  /** IPv4 addresses in the reply (already without blocked ranges); never empty. */
  addresses: string[];
  /** How long the addresses may be used, clamped to `ttlRangeSeconds`; no returned record has a longer TTL. */
  ttlSeconds: number;
  /** The rule that allowed the name. */
  rule: string | null;
}

/** A name the policy (or the name check) refused: answered NXDOMAIN (FORMERR for a malformed name), never forwarded. */
export interface DnsDeniedEvent {
  sandboxId: string;
  /** Normalized name, or the name as decoded when it is not a plain hostname. */
  name: string;
  /** Query type as `dns-packet` names it (`A`, `AAAA`, `TXT`, `UNKNOWN_65`, ...). */
  qtype: string;
}

/**
 * A name the policy allowed whose lookup got no address: `NXDOMAIN` (the upstream says there is no such
 * name) or `SERVFAIL` (no answer could be had: every upstream failed, timed out or answered SERVFAIL, the
 * query deadline passed, the resolver was at `maxInFlight`, or opening the addresses failed).
 */
export interface DnsFailedEvent {
  sandboxId: string;
  /** Normalized name. */
  name: string;
  /** Query type as `dns-packet` names it (an `A` question: the others are answered empty here). */
  qtype: string;
  rcode: 'NXDOMAIN' | 'SERVFAIL';
  /** The rule that allowed the name. */
  rule: string | null;
}

/** Addresses removed from an answer because they lie in a blocked range. */
export interface DnsDroppedAddressesEvent {
  sandboxId: string;
  name: string;
  addresses: string[];
}

/** The resolver's own answer for a name of a local zone: `addresses` (IPv4; empty → NXDOMAIN) for `ttlSeconds`. */
export interface LocalZoneAnswer {
  addresses: string[];
  ttlSeconds: number;
}

/**
 * Names the resolver answers itself, never upstream (private networks' `.internal`, see
 * `private/internal-zone.ts`), before and whatever the asker's egress policy.
 */
export interface LocalZone {
  /** The answer to `name` (normalized) asked by the sandbox at `source`, or null when the name is not in the zone. */
  answer(source: string, name: string): LocalZoneAnswer | null;
}

/** Where an internal error happened (for logging; the query was answered SERVFAIL). */
export type DnsErrorSource = 'policy' | 'upstream' | 'hook' | 'report' | 'socket';

export interface PolicyDnsResolverOptions {
  /** Address to listen on (UDP and TCP). */
  listenAddress: string;
  /** Port for both transports; default 53. `0` picks a free port (the same one for UDP and TCP). */
  port?: number;
  /** Resolvers to forward allowed names to, tried in order. */
  upstreams: DnsUpstream[];
  /** The sandbox a query's source address belongs to; `null` → REFUSED. A throw → SERVFAIL. */
  sandboxForSource(address: string): DnsSandboxPolicy | null | Promise<DnsSandboxPolicy | null>;
  /** Awaited before an A answer with addresses is sent. A throw (or not settling before the query deadline) → SERVFAIL. */
  onAnswer(event: DnsAnswerEvent): void | Promise<void>;
  /** Names answered here, never forwarded (see {@link LocalZone}); default none. */
  localZone?: LocalZone;
  /** Called (not awaited) for each denied name. */
  onDenied?(event: DnsDeniedEvent): void;
  /** Called (not awaited) for each allowed name whose lookup failed (answered NXDOMAIN or SERVFAIL). */
  onFailed?(event: DnsFailedEvent): void;
  /** Called (not awaited) when blocked addresses were removed from an answer. */
  onAddressesDropped?(event: DnsDroppedAddressesEvent): void;
  /** Called for internal errors (upstream failures, hook throws, socket errors). */
  onError?(error: unknown, source: DnsErrorSource): void;
  /** IPv4 CIDRs removed from A answers; default {@link DEFAULT_BLOCKED_RANGES}. */
  blockedRanges?: readonly string[];
  /** Clamp for answered TTLs, seconds; default `{ min: 30, max: 3600 }`. */
  ttlRangeSeconds?: TtlRange;
  /** Limit for one exchange with one upstream; default 2000 ms. */
  upstreamTimeoutMs?: number;
  /** Limit for the whole query (every upstream attempt plus the hook); default 5000 ms. */
  queryTimeoutMs?: number;
  /** Forwarded queries in progress at once; beyond it → SERVFAIL. Default 512. */
  maxInFlight?: number;
  /** TCP client connections at once; default 256. */
  maxTcpConnections?: number;
  /** A TCP client connection idle this long is closed; default 10000 ms. */
  tcpIdleTimeoutMs?: number;
}

/** Counters and accumulated times since start (times in milliseconds, summed over queries). */
export interface DnsResolverStats {
  /** Queries decoded (malformed packets are counted apart). */
  queries: number;
  /** Replies with data from upstream, or empty by design (AAAA, HTTPS, SVCB, ANY). */
  answered: number;
  /** Names refused by policy (NXDOMAIN) or by the name check (FORMERR). */
  denied: number;
  /** Unknown source addresses (REFUSED). */
  refused: number;
  /** SERVFAIL: upstream failure, hook failure, deadline, overload or a policy callback throwing. */
  failed: number;
  /** Not-understood packets and unsupported opcodes/classes. */
  malformed: number;
  /** Of `failed`, because `maxInFlight` was reached. */
  overloaded: number;
  /** Answers fetched again over TCP after a truncated UDP answer. */
  tcpFallbacks: number;
  /** Addresses removed from answers (blocked ranges). */
  droppedAddresses: number;
  /** Forwarded queries in progress now. */
  inFlight: number;
  /** Time spent waiting for upstreams. */
  upstreamMs: number;
  /** Time spent waiting for `onAnswer`. */
  hookMs: number;
  /** Time from receiving each query to having its reply ready. */
  totalMs: number;
  /** `totalMs - upstreamMs - hookMs`: the resolver's own processing. */
  ownMs: number;
}
