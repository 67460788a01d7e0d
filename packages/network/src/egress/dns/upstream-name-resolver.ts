/**
 * `UpstreamNameResolver`: how the SNI/Host proxy turns an allowed name into addresses to dial. It asks
 * the same upstream resolvers as the policy DNS resolver (never the sandbox's choice of address, never the
 * host's stub resolver), keeps only A records along the CNAME chain, and caches each answer for its TTL
 * (clamped) so that a burst of connections costs one lookup. Blocked addresses are kept (the proxy skips
 * them itself and reports `blocked-address`) unless `blockedRanges` is given.
 */
import { ipv4RangeSet, type Ipv4RangeSet } from '../policy/address-ranges.js';
import { filterAnswer, type TtlRange } from './dns-filter.js';
import { queryUpstreams, type DnsUpstream } from './dns-upstream.js';

export interface UpstreamNameResolverOptions {
  upstreams: readonly DnsUpstream[];
  /** Ranges removed from answers; default none. */
  blockedRanges?: readonly string[];
  /** Clamp for how long an answer is cached, seconds; default `{ min: 0, max: 300 }`. */
  cacheTtlSeconds?: TtlRange;
  /** Limit for one exchange with one upstream; default 2000 ms. */
  attemptTimeoutMs?: number;
  /** Limit for the whole lookup; default 4000 ms. */
  timeoutMs?: number;
  /** Names cached at most; the oldest entry is dropped first. Default 4096. */
  maxCacheEntries?: number;
}

export class UpstreamNameResolver {
  private readonly options: UpstreamNameResolverOptions;
  private readonly blocked: Ipv4RangeSet;
  private readonly cache = new Map<string, { addresses: string[]; until: number }>();
  private readonly pending = new Map<string, Promise<string[]>>();

  /** Throws `RangeError` for a malformed blocked range. */
  constructor(options: UpstreamNameResolverOptions) {
    this.options = options;
    this.blocked = ipv4RangeSet(options.blockedRanges ?? []);
  }

  /**
   * IPv4 addresses of `name` (lowercase, no trailing dot), without blocked ones; empty for NXDOMAIN or no A
   * record. Rejects `RUNTIME_ERROR` when no upstream answered, or on timeout.
   */
  resolve(name: string): Promise<string[]> {
    const hit = this.cache.get(name);
    if (hit && hit.until > Date.now()) return Promise.resolve([...hit.addresses]);
    const running = this.pending.get(name);
    if (running) return running.then((a) => [...a]);
    const lookup = this.lookup(name).finally(() => this.pending.delete(name));
    this.pending.set(name, lookup);
    return lookup.then((a) => [...a]);
  }

  private async lookup(name: string): Promise<string[]> {
    const signal = AbortSignal.timeout(this.options.timeoutMs ?? 4000);
    const { message } = await queryUpstreams(this.options.upstreams, { name, type: 'A', class: 'IN' }, {
      attemptTimeoutMs: this.options.attemptTimeoutMs ?? 2000,
      signal,
    });
    if (message.rcode !== 'NOERROR') return [];
    const filtered = filterAnswer(message, name, 'A', this.blocked, this.options.cacheTtlSeconds ?? { min: 0, max: 300 });
    if (filtered.addresses.length > 0 && filtered.ttlSeconds > 0) {
      if (this.cache.size >= (this.options.maxCacheEntries ?? 4096)) this.cache.delete(this.cache.keys().next().value as string);
      this.cache.set(name, { addresses: filtered.addresses, until: Date.now() + filtered.ttlSeconds * 1000 });
    }
    return filtered.addresses;
  }
}
