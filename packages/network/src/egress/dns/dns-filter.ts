/**
 * What the policy resolver keeps of an upstream answer. Pure functions: no sockets, no policy.
 */
import type { Ipv4RangeSet } from '../policy/address-ranges.js';
import type { Answer, DnsMessage } from './dns-wire.js';

/** Query types answered locally with no records (NOERROR, empty): IPv6 addresses and address hints are never handed out. */
export const EMPTY_ANSWER_TYPES: ReadonlySet<string> = new Set(['AAAA', 'ANY', 'UNKNOWN_64' /* SVCB */, 'UNKNOWN_65' /* HTTPS */]);

/** Inclusive clamp for the TTL the resolver reports and hands out, in seconds. */
export interface TtlRange {
  min: number;
  max: number;
}

export interface FilteredAnswer {
  /** Records to return: the CNAME chain from the question name plus the records of the asked type. */
  answers: Answer[];
  /** SOA records of the upstream's authority section (negative caching); everything else is dropped. */
  authorities: Answer[];
  /** A-record addresses kept, in answer order without duplicates (A queries only). */
  addresses: string[];
  /** A-record addresses removed because they lie in a blocked range. */
  dropped: string[];
  /**
   * Lifetime of `addresses` in seconds: the smallest TTL along the chain, clamped to the range. The TTL
   * of every returned record is lowered to at most this value, so clients never cache an address longer
   * than the enforcer was told it lives.
   */
  ttlSeconds: number;
}

type RecordWithData = Answer & { name: string; ttl?: number; data?: unknown };

/**
 * Filter an upstream answer to `qname`/`qtype`:
 * - follow CNAMEs from `qname`; records owned by names outside that chain are dropped;
 * - for A: keep addresses outside `blocked`; for other types: keep records of that type;
 * - drop AAAA, DNAME, signatures and everything else; keep only SOA in the authority section.
 */
export function filterAnswer(upstream: DnsMessage, qname: string, qtype: string, blocked: Ipv4RangeSet, ttlRange: TtlRange): FilteredAnswer {
  const records = upstream.answers.filter((r) => r.type !== 'OPT' && ((r as { class?: string }).class ?? 'IN') === 'IN') as RecordWithData[];
  const chain = new Set([qname]);
  const chainRecords: RecordWithData[] = [];
  for (let grew = true; grew; ) {
    grew = false;
    for (const r of records) {
      if (r.type !== 'CNAME' || chainRecords.includes(r) || !chain.has(r.name.toLowerCase())) continue;
      chainRecords.push(r);
      chain.add(String(r.data).toLowerCase().replace(/\.$/, ''));
      grew = true;
    }
  }
  const kept: RecordWithData[] = [];
  const addresses: string[] = [];
  const dropped: string[] = [];
  for (const r of records) {
    if (r.type !== qtype || chainRecords.includes(r) || !chain.has(r.name.toLowerCase())) continue;
    if (qtype === 'A') {
      const address = String(r.data);
      if (blocked.has(address)) {
        if (!dropped.includes(address)) dropped.push(address);
        continue;
      }
      if (addresses.includes(address)) continue;
      addresses.push(address);
    }
    kept.push(r);
  }
  const result = [...chainRecords, ...kept];
  const minTtl = result.reduce((m, r) => Math.min(m, r.ttl ?? 0), Number.POSITIVE_INFINITY);
  const ttlSeconds = clamp(Number.isFinite(minTtl) ? minTtl : ttlRange.min, ttlRange);
  return {
    answers: result.map((r) => ({ ...r, ttl: Math.min(r.ttl ?? 0, ttlSeconds) }) as Answer),
    authorities: upstream.authorities.filter((r) => r.type === 'SOA'),
    addresses,
    dropped,
    ttlSeconds,
  };
}

function clamp(value: number, range: TtlRange): number {
  return Math.min(range.max, Math.max(range.min, value));
}
