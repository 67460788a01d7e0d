/**
 * How often a sandbox's denied and failed DNS lookups reach the egress log. A resolver library retries a
 * failing name (glibc asks A and AAAA, twice, per lookup), and a program in a loop, or one trying random
 * names, can ask thousands a second; each would be a log row. Two bounds, per sandbox:
 * - the same report (name, verdict, DNS error) within `repeatWindowMs` of the last one is dropped;
 * - at most `burst` reports at once, refilled at `perSecond` (a token bucket), whatever the names.
 * So a sandbox adds at most `burst + perSecond × t` DNS entries in `t` seconds, and a name that keeps
 * failing is in the log once per window. Allowed lookups that got addresses are not limited here: each
 * opens addresses, and the log says which.
 */

export interface DnsReportLimitOptions {
  /** Window in which a repeated report is dropped, ms; default 30000. */
  repeatWindowMs?: number;
  /** Reports a sandbox may make at once; default 30. */
  burst?: number;
  /** Reports a sandbox regains per second; default 1. */
  perSecond?: number;
}

/** Most keys (repeats, sandboxes) remembered; the oldest go first. */
const MAX_REMEMBERED = 10_000;

/** Decides which DNS reports are logged (see the module comment). */
export class DnsReportLimit {
  private readonly repeatWindowMs: number;
  private readonly burst: number;
  private readonly perSecond: number;
  /** Report key → when it was last admitted (ms). */
  private readonly recent = new Map<string, number>();
  /** Sandbox → its tokens and when they were counted (ms). */
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private droppedCount = 0;

  constructor(options: DnsReportLimitOptions = {}) {
    this.repeatWindowMs = options.repeatWindowMs ?? 30_000;
    this.burst = options.burst ?? 30;
    this.perSecond = options.perSecond ?? 1;
  }

  /** Reports dropped so far. */
  get dropped(): number {
    return this.droppedCount;
  }

  /** Whether the report `key` (name, verdict, error) of `sandboxId` at `now` (ms) is logged. */
  admit(sandboxId: string, key: string, now: number = Date.now()): boolean {
    const repeatKey = `${sandboxId}|${key}`;
    const seen = this.recent.get(repeatKey);
    if (seen !== undefined && now - seen < this.repeatWindowMs) return this.drop();
    const bucket = this.buckets.get(sandboxId) ?? { tokens: this.burst, at: now };
    const tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
    if (tokens < 1) {
      this.remember(this.buckets, sandboxId, { tokens, at: now });
      return this.drop();
    }
    this.remember(this.buckets, sandboxId, { tokens: tokens - 1, at: now });
    this.remember(this.recent, repeatKey, now);
    return true;
  }

  private drop(): false {
    this.droppedCount++;
    return false;
  }

  /** Set `key` as the newest entry of `map`, dropping the oldest beyond the bound. */
  private remember<V>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    map.set(key, value);
    for (const oldest of map.keys()) {
      if (map.size <= MAX_REMEMBERED) break;
      map.delete(oldest);
    }
  }
}
