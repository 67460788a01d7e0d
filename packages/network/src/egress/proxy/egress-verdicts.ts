/**
 * `EgressVerdicts`: turns what the three enforcement parts see into {@link EgressVerdict}s for the egress
 * log. Sources: the policy DNS resolver (protocol `dns`: each answered address of an allowed name, each
 * denied name with an empty destination, and each allowed name whose lookup failed, with an empty
 * destination and `error` NXDOMAIN or SERVFAIL), the SNI/Host proxy (tcp, the SNI/Host as `name`) and the
 * nftables log (every other new connection and every denied packet: tcp, udp, icmp).
 *
 * The sandbox is the one holding the slot when the verdict is turned into an entry: found by the slot's
 * host veth (the packet's input interface) or else by its slot address. `rule` is the normalised rule that
 * matched: for a packet, the first rule matching its address and port, or a name rule matching a name the
 * sandbox resolved to that address; null when denied or when egress is open.
 *
 * Volume: the kernel rate-limits the log per slot; repeats of one denied packet (same addresses, ports and
 * protocol, e.g. SYN retransmissions) within `repeatWindowMs` are reported once. Denied and failed DNS
 * lookups are bounded per sandbox by {@link DnsReportLimit} (a repeat once per window, and a token bucket).
 */
import { formatEgressRule, type EgressVerdict } from '@ramify/core';
import type { DnsAnswerEvent, DnsDeniedEvent, DnsFailedEvent } from '../dns/dns-resolver-types.js';
import { DnsReportLimit, type DnsReportLimitOptions } from './dns-report-limit.js';
import type { EgressProxyDecision } from './egress-proxy-types.js';
import type { NflogPacket } from '../nft/nflog-reader.js';
import { NFLOG_KINDS } from '../nft/nft-ruleset.js';
import { matchConnection } from '../policy/policy-match.js';
import type { SlotPolicyReader } from '../policy/slot-policies.js';
import type { NetworkDirectoryReader } from '../../private/network-directory.js';

/** How verdicts find the sandbox behind a slot: the part of the slot → policy table they read. */
export type SlotLookup = Pick<SlotPolicyReader, 'slotByAddress' | 'slotByNumber'>;

export interface EgressVerdictsOptions {
  /** Network prefix: slot host veths are `<prefix>h<slot>`. */
  prefix: string;
  slots: SlotLookup;
  /** Receives every verdict; a throw goes to `onError`. */
  emit(verdict: EgressVerdict): void;
  onError?(error: unknown): void;
  /**
   * Private networks: which network let two slots talk, and the destination's name there. With it, an
   * entry about a packet to another sandbox's slot carries `peer` (that sandbox, and the network when allowed).
   */
  networks?: Pick<NetworkDirectoryReader, 'sharedNetwork' | 'hostnameOn'>;
  /** Window for reporting a repeated denied packet once; default 30000 ms. */
  repeatWindowMs?: number;
  /** Bounds on denied and failed DNS lookups reported per sandbox (see {@link DnsReportLimit}); defaults there. */
  dnsReports?: DnsReportLimitOptions;
  /**
   * How long a denied proxy decision waits for the nftables record of its connection (which carries the
   * address the sandbox dialed) before it is reported with an empty destination; default 500 ms, 0 = never.
   */
  intentWaitMs?: number;
}

const PROTOCOLS: Record<number, 'tcp' | 'udp' | 'icmp'> = { 6: 'tcp', 17: 'udp', 1: 'icmp' };
const MAX_REMEMBERED = 10_000;

export class EgressVerdicts {
  private readonly options: EgressVerdictsOptions;
  private readonly vethPattern: RegExp;
  /** Recently reported denied packets → time (ms). */
  private readonly recent = new Map<string, number>();
  /** `source:port` of proxied connections → the destination the sandbox dialed, and when it was logged (ms). */
  private readonly intents = new Map<string, { destination: string; at: number }>();
  private readonly intentWaiters = new Map<string, () => void>();

  private intentWaitMs: number;
  private readonly dnsLimit: DnsReportLimit;

  constructor(options: EgressVerdictsOptions) {
    this.options = options;
    this.dnsLimit = new DnsReportLimit(options.dnsReports);
    this.vethPattern = new RegExp(`^${options.prefix}h(\\d+)$`);
    this.intentWaitMs = options.intentWaitMs ?? 500;
  }

  /** Change `intentWaitMs` (0 while the nftables log is not being read: no record will come). */
  setIntentWaitMs(ms: number): void {
    this.intentWaitMs = ms;
  }

  /** An allowed name was answered (after the addresses were opened): one `dns` entry per address. */
  dnsAnswered(event: DnsAnswerEvent): void {
    const at = new Date().toISOString();
    for (const destination of event.addresses) {
      this.emit({ sandboxId: event.sandboxId, at, protocol: 'dns', destination, port: null, name: event.name, verdict: 'allowed', rule: event.rule });
    }
  }

  /** A name was refused (NXDOMAIN/FORMERR, never forwarded); within the sandbox's DNS report bounds. */
  dnsDenied(event: DnsDeniedEvent): void {
    if (!this.dnsLimit.admit(event.sandboxId, `denied|${event.name}`)) return;
    this.emit({ sandboxId: event.sandboxId, at: new Date().toISOString(), protocol: 'dns', destination: '', port: null, name: event.name, verdict: 'denied', rule: null });
  }

  /** An allowed name's lookup got no address (NXDOMAIN or SERVFAIL); within the sandbox's DNS report bounds. */
  dnsFailed(event: DnsFailedEvent): void {
    if (!this.dnsLimit.admit(event.sandboxId, `failed|${event.rcode}|${event.name}`)) return;
    this.emit({ sandboxId: event.sandboxId, at: new Date().toISOString(), protocol: 'dns', destination: '', port: null, name: event.name, verdict: 'allowed', rule: event.rule, error: event.rcode });
  }

  /** Denied and failed DNS lookups left out of the log by the bounds so far. */
  get dnsReportsDropped(): number {
    return this.dnsLimit.dropped;
  }

  /**
   * One proxy decision. Allowed (and `failed`: allowed, but resolving or connecting failed) report the
   * address the proxy dialed, if any; denied ones the address the sandbox dialed when the nftables log
   * gives it. Decisions about unknown sources are dropped.
   */
  proxyDecision(decision: EgressProxyDecision): void {
    const sandboxId = decision.sandboxId;
    if (sandboxId === null) return;
    const allowed = decision.verdict !== 'denied';
    const at = new Date().toISOString();
    const report = (destination: string): void =>
      this.emit({ sandboxId, at, protocol: 'tcp', destination, port: decision.port, name: decision.name, verdict: allowed ? 'allowed' : 'denied', rule: allowed ? decision.rule : null });
    const known = decision.destination ?? decision.intended?.address ?? null;
    if (known) return report(known);
    void this.intentOf(decision.source, decision.sourcePort).then((destination) => report(destination ?? ''));
  }

  /** One packet from the nftables log. */
  packet(packet: NflogPacket): void {
    if (packet.kind === NFLOG_KINDS.proxied) return this.rememberIntent(packet);
    const allowedKinds: string[] = [NFLOG_KINDS.allowed, NFLOG_KINDS.peer];
    const verdict = allowedKinds.includes(packet.kind) ? 'allowed' : packet.kind === NFLOG_KINDS.denied ? 'denied' : null;
    const protocol = PROTOCOLS[packet.protocol];
    if (verdict === null || protocol === undefined) return;
    const veth = this.vethPattern.exec(packet.inInterface);
    const slot = veth ? this.options.slots.slotByNumber(Number(veth[1])) : this.options.slots.slotByAddress(packet.source);
    if (!slot) return;
    const port = protocol === 'icmp' ? null : packet.destinationPort;
    if (verdict === 'denied' && this.isRepeat(packet)) return;
    const names = slot.namesFor(packet.destination);
    let rule: string | null = null;
    let name = names[0] ?? null;
    if (verdict === 'allowed' && slot.policy.rules.length > 0) {
      const match = matchConnection(slot.policy, { address: packet.destination, port, names });
      if (match) {
        rule = formatEgressRule(match.rule);
        name = match.name ?? name;
      }
    }
    const entry: EgressVerdict = { sandboxId: slot.sandboxId, at: packet.at.toISOString(), protocol, destination: packet.destination, port, name, verdict, rule };
    const target = this.options.slots.slotByAddress(packet.destination);
    if (!target) return this.emit(entry);
    // Between two sandboxes: allowed only by a network they share.
    const network = verdict === 'allowed' ? (this.options.networks?.sharedNetwork(packet.source, packet.destination) ?? null) : null;
    const hostname = network === null ? null : (this.options.networks?.hostnameOn(packet.destination, network) ?? null);
    this.emit({ ...entry, name: hostname ?? entry.name, peer: { sandboxId: target.sandboxId, network } });
  }

  private emit(verdict: EgressVerdict): void {
    try {
      this.options.emit(verdict);
    } catch (err) {
      this.options.onError?.(err);
    }
  }

  private isRepeat(p: NflogPacket): boolean {
    const key = [p.inInterface, p.protocol, p.source, p.sourcePort, p.destination, p.destinationPort, p.icmp?.type, p.icmp?.id, p.icmp?.sequence].join('|');
    const now = Date.now();
    const window = this.options.repeatWindowMs ?? 30_000;
    const seen = this.recent.get(key);
    if (seen !== undefined && now - seen < window) return true;
    this.recent.delete(key);
    this.recent.set(key, now);
    prune(this.recent, (at) => now - at >= window);
    return false;
  }

  private rememberIntent(p: NflogPacket): void {
    const key = `${p.source}:${p.sourcePort}`;
    const now = Date.now();
    this.intents.delete(key);
    this.intents.set(key, { destination: p.destination, at: now });
    prune(this.intents, (e) => now - e.at >= 60_000);
    this.intentWaiters.get(key)?.();
  }

  /** The destination the nftables log recorded for a proxied connection, waiting up to `intentWaitMs`. */
  private intentOf(source: string, port: number): Promise<string | null> {
    const key = `${source}:${port}`;
    const known = this.intents.get(key);
    const wait = this.intentWaitMs;
    if (known || wait <= 0) return Promise.resolve(known?.destination ?? null);
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.intentWaiters.delete(key);
        resolve(this.intents.get(key)?.destination ?? null);
      };
      const timer = setTimeout(done, wait);
      this.intentWaiters.set(key, done);
    });
  }
}

/** Drop the oldest entries (insertion order) while they are stale or the map is over its bound. */
function prune<V>(map: Map<string, V>, stale: (value: V) => boolean): void {
  for (const [key, value] of map) {
    if (map.size <= MAX_REMEMBERED && !stale(value)) break;
    map.delete(key);
  }
}
