/**
 * `PolicyDnsResolver`: the daemon's DNS server for sandboxes (NETWORK.md). Every sandbox's port-53
 * traffic is redirected to it; it identifies the sandbox by source address, answers only names the
 * sandbox's policy allows (NXDOMAIN otherwise, never asking upstream), forwards allowed names to the
 * upstream resolvers, removes blocked addresses and every IPv6 record, and awaits `onAnswer` (where the
 * enforcer opens the addresses) before replying; any failure on that path is SERVFAIL (fail closed).
 *
 * Lifecycle: `new` → `start()` (binds UDP and TCP) → `close()`. No caching: every allowed query is
 * forwarded, so every answer passes through `onAnswer`.
 */
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, isIPv6, type Server, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { DEFAULT_BLOCKED_RANGES, ipv4RangeSet, type Ipv4RangeSet } from '../policy/address-ranges.js';
import { EMPTY_ANSWER_TYPES, filterAnswer } from './dns-filter.js';
import { queryUpstreams } from './dns-upstream.js';
import {
  decodeMessage, encodeBareReply, encodeReply, frameForTcp, normalizeName, takeTcpFrames, udpLimitFor,
  type Answer, type DnsMessage, type Question, type ReplyContent,
} from './dns-wire.js';
import type { DnsErrorSource, DnsResolverStats, DnsSandboxPolicy, LocalZoneAnswer, PolicyDnsResolverOptions } from './dns-resolver-types.js';

type Counters = Omit<DnsResolverStats, 'ownMs' | 'inFlight'>;
/** Time spent outside the resolver while answering one query. */
interface Span {
  upstreamMs: number;
  hookMs: number;
}

export class PolicyDnsResolver {
  private readonly options: PolicyDnsResolverOptions;
  private readonly blocked: Ipv4RangeSet;
  private udp: UdpSocket | undefined;
  private tcp: Server | undefined;
  private readonly connections = new Set<Socket>();
  private boundPort = 0;
  private inFlight = 0;
  private closed = false;
  private counters: Counters = PolicyDnsResolver.zero();

  /** Throws `RangeError` for a malformed blocked range. Does not touch the network (see {@link start}). */
  constructor(options: PolicyDnsResolverOptions) {
    this.options = options;
    this.blocked = ipv4RangeSet(options.blockedRanges ?? DEFAULT_BLOCKED_RANGES);
  }

  private static zero(): Counters {
    return { queries: 0, answered: 0, denied: 0, refused: 0, failed: 0, malformed: 0, overloaded: 0, tcpFallbacks: 0, droppedAddresses: 0, upstreamMs: 0, hookMs: 0, totalMs: 0 };
  }

  /** Bind UDP and TCP; resolves with the bound address. Rejects with the socket error (e.g. `EADDRINUSE`). */
  async start(): Promise<{ address: string; port: number }> {
    const address = this.options.listenAddress;
    const wanted = this.options.port ?? 53;
    for (let attempt = 0; ; attempt++) {
      const udp = createSocket(isIPv6(address) ? 'udp6' : 'udp4');
      await new Promise<void>((resolve, reject) => {
        udp.once('error', reject);
        udp.bind(wanted, address, () => {
          udp.off('error', reject);
          resolve();
        });
      });
      const port = udp.address().port;
      const tcp = createServer((socket) => this.serveTcp(socket));
      tcp.maxConnections = this.options.maxTcpConnections ?? 256;
      try {
        await new Promise<void>((resolve, reject) => {
          tcp.once('error', reject);
          tcp.listen({ host: address, port }, () => {
            tcp.off('error', reject);
            resolve();
          });
        });
      } catch (err) {
        udp.close();
        // With port 0 the TCP side of the chosen UDP port may be taken: pick another.
        if (wanted === 0 && (err as NodeJS.ErrnoException).code === 'EADDRINUSE' && attempt < 10) continue;
        throw err;
      }
      udp.on('error', (err) => this.report(err, 'socket'));
      udp.on('message', (msg, rinfo) => {
        void this.answer(msg, rinfo.address, 'udp').then((reply) => {
          if (reply && !this.closed) udp.send(reply, rinfo.port, rinfo.address, (err) => err && this.report(err, 'socket'));
        });
      });
      tcp.on('error', (err) => this.report(err, 'socket'));
      this.udp = udp;
      this.tcp = tcp;
      this.boundPort = port;
      return { address, port };
    }
  }

  /** The bound address (port 0 before {@link start}). */
  get address(): { address: string; port: number } {
    return { address: this.options.listenAddress, port: this.boundPort };
  }

  /** Stop listening and drop TCP clients. Queries still in progress get no reply. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    for (const socket of this.connections) socket.destroy();
    const udp = this.udp;
    const tcp = this.tcp;
    this.udp = undefined;
    this.tcp = undefined;
    await Promise.all([
      udp && new Promise<void>((resolve) => udp.close(() => resolve())),
      tcp && new Promise<void>((resolve) => tcp.close(() => resolve())),
    ]);
  }

  /** Counters and times since start (or the last {@link resetStats}). */
  stats(): DnsResolverStats {
    const c = this.counters;
    return { ...c, inFlight: this.inFlight, ownMs: Math.max(0, c.totalMs - c.upstreamMs - c.hookMs) };
  }

  /** Zero the counters (benchmarks). */
  resetStats(): void {
    this.counters = PolicyDnsResolver.zero();
  }

  private serveTcp(socket: Socket): void {
    this.connections.add(socket);
    socket.on('close', () => this.connections.delete(socket));
    socket.on('error', () => undefined);
    socket.setTimeout(this.options.tcpIdleTimeoutMs ?? 10_000, () => socket.destroy());
    const source = socket.remoteAddress ?? '';
    let buffer: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      const { frames, rest } = takeTcpFrames(Buffer.concat([buffer, chunk]));
      buffer = rest;
      for (const frame of frames) {
        void this.answer(frame, source, 'tcp').then((reply) => {
          if (reply && !socket.destroyed) socket.write(frameForTcp(reply));
        });
      }
    });
  }

  /** The encoded reply to one raw query, or null when nothing should be sent. Never rejects. */
  private async answer(raw: Buffer, rawSource: string, transport: 'udp' | 'tcp'): Promise<Buffer | null> {
    const started = performance.now();
    const source = rawSource.startsWith('::ffff:') ? rawSource.slice(7) : rawSource;
    let query: DnsMessage;
    try {
      query = decodeMessage(raw);
    } catch {
      this.counters.malformed++;
      return raw.length >= 12 && (raw[2]! & 0x80) === 0 ? encodeBareReply(raw.readUInt16BE(0), 'FORMERR') : null;
    }
    if (query.isResponse) {
      this.counters.malformed++;
      return null;
    }
    this.counters.queries++;
    const span: Span = { upstreamMs: 0, hookMs: 0 };
    let content: ReplyContent;
    try {
      content = await this.decide(query, source, span);
    } catch (err) {
      this.report(err, 'policy');
      this.counters.failed++;
      content = { rcode: 'SERVFAIL' };
    }
    let reply: Buffer;
    try {
      reply = encodeReply(query, content);
      if (transport === 'udp' && reply.length > udpLimitFor(query)) {
        reply = encodeReply(query, { rcode: content.rcode, truncated: true, omitQuestion: content.omitQuestion });
      }
    } catch (err) {
      // An upstream record the library cannot re-encode: fail closed rather than crash.
      this.report(err, 'upstream');
      this.counters.failed++;
      reply = encodeBareReply(query.id, 'SERVFAIL');
    }
    this.counters.upstreamMs += span.upstreamMs;
    this.counters.hookMs += span.hookMs;
    this.counters.totalMs += performance.now() - started;
    return reply;
  }

  /** The verdict for one decoded query. Throws only when a policy callback throws (→ SERVFAIL). */
  private async decide(query: DnsMessage, source: string, span: Span): Promise<ReplyContent> {
    const question = query.questions[0];
    if (query.opcode !== 'QUERY') return this.malformed({ rcode: 'NOTIMP', omitQuestion: true });
    if (query.questions.length !== 1 || !question) return this.malformed({ rcode: 'FORMERR', omitQuestion: true });
    const name = normalizeName(question.name);
    const omitQuestion = name === null;
    const policy = await this.options.sandboxForSource(source);
    if (!policy) {
      this.counters.refused++;
      return { rcode: 'REFUSED', omitQuestion };
    }
    if ((question.class ?? 'IN') !== 'IN') return this.malformed({ rcode: 'REFUSED', omitQuestion });
    if (name === null) {
      this.deny(policy, question.name, question.type);
      return { rcode: 'FORMERR', omitQuestion };
    }
    const local = this.options.localZone?.answer(source, name);
    if (local) return this.answerLocally(policy, { name, qtype: question.type }, local);
    const verdict = policy.allow(name);
    if (!verdict.allowed) {
      this.deny(policy, name, question.type);
      return { rcode: 'NXDOMAIN' };
    }
    if (EMPTY_ANSWER_TYPES.has(question.type)) {
      this.counters.answered++;
      return { rcode: 'NOERROR' };
    }
    if (this.inFlight >= (this.options.maxInFlight ?? 512)) {
      this.counters.overloaded++;
      this.counters.failed++;
      this.fail(policy, { name, qtype: question.type, rule: verdict.rule }, 'SERVFAIL');
      return { rcode: 'SERVFAIL' };
    }
    this.inFlight++;
    try {
      return await this.forward(policy, { name, qtype: question.type, rule: verdict.rule }, span);
    } finally {
      this.inFlight--;
    }
  }

  /** Ask upstream, filter, await the hook. Every failure is SERVFAIL. */
  private async forward(policy: DnsSandboxPolicy, ask: { name: string; qtype: Question['type']; rule: string | null }, span: Span): Promise<ReplyContent> {
    const { name, qtype, rule } = ask;
    const deadline = new AbortController();
    const timeoutMs = this.options.queryTimeoutMs ?? 5000;
    const timer = setTimeout(() => deadline.abort(new Error(`query deadline of ${timeoutMs} ms passed`)), timeoutMs);
    let stage: DnsErrorSource = 'upstream';
    try {
      const t0 = performance.now();
      const upstream = await queryUpstreams(this.options.upstreams, { name, type: qtype, class: 'IN' }, {
        attemptTimeoutMs: this.options.upstreamTimeoutMs ?? 2000,
        signal: deadline.signal,
      }).finally(() => (span.upstreamMs += performance.now() - t0));
      if (upstream.transport === 'tcp') this.counters.tcpFallbacks++;
      if (upstream.message.rcode === 'NXDOMAIN') {
        this.counters.answered++;
        this.fail(policy, ask, 'NXDOMAIN');
        return { rcode: 'NXDOMAIN', authorities: upstream.message.authorities.filter((r) => r.type === 'SOA') };
      }
      const filtered = filterAnswer(upstream.message, name, qtype, this.blocked, this.options.ttlRangeSeconds ?? { min: 30, max: 3600 });
      if (filtered.dropped.length > 0) {
        this.counters.droppedAddresses += filtered.dropped.length;
        this.notify(() => this.options.onAddressesDropped?.({ sandboxId: policy.sandboxId, name, addresses: filtered.dropped }));
      }
      if (filtered.addresses.length > 0) {
        stage = 'hook';
        const t1 = performance.now();
        const hook = Promise.resolve().then(() => this.options.onAnswer({ sandboxId: policy.sandboxId, name, addresses: filtered.addresses, ttlSeconds: filtered.ttlSeconds, rule }));
        await untilAborted(hook, deadline.signal).finally(() => (span.hookMs += performance.now() - t1));
      }
      this.counters.answered++;
      return { rcode: 'NOERROR', answers: filtered.answers, authorities: filtered.authorities };
    } catch (err) {
      this.report(err, stage);
      this.counters.failed++;
      this.fail(policy, ask, 'SERVFAIL');
      return { rcode: 'SERVFAIL' };
    } finally {
      clearTimeout(timer);
    }
  }

  /** A local zone's answer: A records for an A question, no data for another type, NXDOMAIN for an unknown name. */
  private answerLocally(policy: DnsSandboxPolicy, ask: { name: string; qtype: Question['type'] }, local: LocalZoneAnswer): ReplyContent {
    if (local.addresses.length === 0) {
      this.deny(policy, ask.name, ask.qtype);
      return { rcode: 'NXDOMAIN' };
    }
    this.counters.answered++;
    if (ask.qtype !== 'A') return { rcode: 'NOERROR' };
    return { rcode: 'NOERROR', answers: local.addresses.map((data) => ({ type: 'A', name: ask.name, ttl: local.ttlSeconds, class: 'IN', data }) as Answer) };
  }

  private malformed(content: ReplyContent): ReplyContent {
    this.counters.malformed++;
    return content;
  }

  private deny(policy: DnsSandboxPolicy, name: string, qtype: string): void {
    this.counters.denied++;
    this.notify(() => this.options.onDenied?.({ sandboxId: policy.sandboxId, name, qtype }));
  }

  private fail(policy: DnsSandboxPolicy, ask: { name: string; qtype: string; rule: string | null }, rcode: 'NXDOMAIN' | 'SERVFAIL'): void {
    this.notify(() => this.options.onFailed?.({ sandboxId: policy.sandboxId, name: ask.name, qtype: ask.qtype, rcode, rule: ask.rule }));
  }

  /** Run a reporting callback; its failure is reported, never turned into a different answer. */
  private notify(callback: () => void): void {
    try {
      callback();
    } catch (err) {
      this.report(err, 'report');
    }
  }

  private report(error: unknown, source: DnsErrorSource): void {
    try {
      this.options.onError?.(error, source);
    } catch {
      // A logging callback must not break the resolver.
    }
  }
}

/** `promise`, or a rejection with the signal's reason once `signal` aborts first. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
