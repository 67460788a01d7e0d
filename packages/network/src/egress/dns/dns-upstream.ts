/**
 * Forwarding one question to upstream resolvers: UDP first, TCP when the UDP answer is truncated;
 * upstreams are tried in order until one gives a usable answer (NOERROR or NXDOMAIN).
 */
import { randomInt } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { connect, isIPv6 } from 'node:net';
import { RamifyError } from '@ramify/contracts';
import { decodeMessage, encodeQuery, frameForTcp, takeTcpFrames, type DnsMessage, type Question } from './dns-wire.js';

/** An upstream resolver. */
export interface DnsUpstream {
  address: string;
  /** Default 53. */
  port?: number;
}

export interface UpstreamQueryOptions {
  /** Limit for each attempt (one UDP or TCP exchange with one upstream). */
  attemptTimeoutMs: number;
  /** Aborts every attempt (the caller's whole-query deadline). */
  signal: AbortSignal;
}

export interface UpstreamResult {
  message: DnsMessage;
  /** The answer came over TCP after a truncated UDP answer. */
  transport: 'udp' | 'tcp';
  upstream: DnsUpstream;
}

/**
 * Ask `upstreams` for `question`. Resolves with the first NOERROR/NXDOMAIN answer; an upstream that
 * times out, fails or answers SERVFAIL/REFUSED is skipped. Rejects `RUNTIME_ERROR` when none answered,
 * or with the signal's reason when aborted.
 */
export async function queryUpstreams(upstreams: readonly DnsUpstream[], question: Question, options: UpstreamQueryOptions): Promise<UpstreamResult> {
  const failures: string[] = [];
  for (const upstream of upstreams) {
    options.signal.throwIfAborted();
    try {
      let message = await exchange('udp', upstream, question, options);
      let transport: 'udp' | 'tcp' = 'udp';
      if (message.truncated) {
        message = await exchange('tcp', upstream, question, options);
        transport = 'tcp';
      }
      if (message.rcode === 'NOERROR' || message.rcode === 'NXDOMAIN') return { message, transport, upstream };
      failures.push(`${upstream.address}: ${message.rcode}`);
    } catch (err) {
      options.signal.throwIfAborted();
      failures.push(`${upstream.address}: ${(err as Error).message}`);
    }
  }
  throw new RamifyError('RUNTIME_ERROR', `no upstream resolver answered ${question.name} ${question.type}: ${failures.join('; ') || 'none configured'}`);
}

/** True when `reply` answers `question` asked with `id`. */
function answers(reply: DnsMessage, id: number, question: Question): boolean {
  const q = reply.questions[0];
  return reply.isResponse && reply.id === id && reply.questions.length === 1 && q !== undefined
    && q.type === question.type && q.name.toLowerCase() === question.name.toLowerCase();
}

/** One exchange with one upstream; rejects on timeout, abort, socket error or a mismatched TCP reply. */
function exchange(transport: 'udp' | 'tcp', upstream: DnsUpstream, question: Question, options: UpstreamQueryOptions): Promise<DnsMessage> {
  const id = randomInt(0, 65536);
  const query = encodeQuery(id, question);
  const port = upstream.port ?? 53;
  return new Promise<DnsMessage>((resolve, reject) => {
    let cleanup = (): void => undefined;
    let done = false;
    const finish = (err: Error | null, message?: DnsMessage): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      cleanup();
      if (err) reject(err);
      else resolve(message!);
    };
    const onAbort = (): void => finish(options.signal.reason instanceof Error ? options.signal.reason : new Error('aborted'));
    const timer = setTimeout(() => finish(new Error(`${transport} timeout after ${options.attemptTimeoutMs} ms`)), options.attemptTimeoutMs);
    options.signal.addEventListener('abort', onAbort, { once: true });

    if (transport === 'udp') {
      const socket = createSocket(isIPv6(upstream.address) ? 'udp6' : 'udp4');
      cleanup = () => socket.close();
      socket.on('error', (err) => finish(err));
      socket.on('message', (buf, rinfo) => {
        // Ignore anything that is not the reply from this upstream to this query (spoofing, stray packets).
        if (rinfo.address !== upstream.address || rinfo.port !== port) return;
        let reply: DnsMessage;
        try {
          reply = decodeMessage(buf);
        } catch {
          return;
        }
        if (answers(reply, id, question)) finish(null, reply);
      });
      socket.send(query, port, upstream.address, (err) => {
        if (err) finish(err);
      });
    } else {
      const socket = connect({ host: upstream.address, port });
      cleanup = () => socket.destroy();
      let buffer: Buffer = Buffer.alloc(0);
      socket.on('error', (err) => finish(err));
      socket.on('end', () => finish(new Error('tcp connection closed before the answer')));
      socket.on('data', (chunk: Buffer) => {
        buffer = Buffer.concat([buffer, chunk]);
        const { frames } = takeTcpFrames(buffer);
        const frame = frames[0];
        if (!frame) return;
        try {
          const reply = decodeMessage(frame);
          finish(answers(reply, id, question) ? null : new Error('tcp answer does not match the query'), reply);
        } catch (err) {
          finish(err as Error);
        }
      });
      socket.write(frameForTcp(query));
    }
  });
}
