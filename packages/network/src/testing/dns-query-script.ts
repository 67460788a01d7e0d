/**
 * A DNS client process, run inside a test namespace: `node dns-query-script.js < REQUEST_JSON`.
 * Sends the queries one after another and prints one JSON array of results.
 */
import { performance } from 'node:perf_hooks';
import { createSocket } from 'node:dgram';
import { connect } from 'node:net';
import * as dnsPacket from 'dns-packet';
import type { RecordType } from 'dns-packet';
import { decodeMessage, frameForTcp, optRecord, takeTcpFrames, type DnsMessage } from '../egress/dns/dns-wire.js';
import type { DnsQueryRequest, DnsQueryResult } from './dns-query.js';

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const request = JSON.parse(Buffer.concat(chunks).toString('utf8')) as DnsQueryRequest;

function exchange(id: number, packet: Buffer): Promise<DnsMessage | null> {
  return new Promise((resolve) => {
    let done = false;
    let cleanup = (): void => undefined;
    const finish = (m: DnsMessage | null): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      cleanup();
      resolve(m);
    };
    const timer = setTimeout(() => finish(null), request.timeoutMs);
    if (request.transport === 'udp') {
      const socket = createSocket('udp4');
      cleanup = () => socket.close();
      socket.on('error', () => finish(null));
      socket.on('message', (buf) => {
        try {
          const m = decodeMessage(buf);
          if (m.id === id) finish(m);
        } catch {
          // not a DNS message: keep waiting
        }
      });
      socket.send(packet, request.port, request.server);
    } else {
      const socket = connect({ host: request.server, port: request.port });
      cleanup = () => socket.destroy();
      let buffer: Buffer = Buffer.alloc(0);
      socket.on('error', () => finish(null));
      socket.on('end', () => finish(null));
      socket.on('data', (chunk: Buffer) => {
        buffer = Buffer.concat([buffer, chunk]);
        const frame = takeTcpFrames(buffer).frames[0];
        if (frame) finish(decodeMessage(frame));
      });
      socket.write(frameForTcp(packet));
    }
  });
}

const results: DnsQueryResult[] = [];
for (const [i, q] of request.queries.entries()) {
  const id = (i * 7919 + 1) % 65536;
  const packet = dnsPacket.encode({
    type: 'query',
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type: q.type as RecordType, name: q.name, class: 'IN' }],
    additionals: request.edns ? [optRecord(1232)] : [],
  });
  const started = performance.now();
  const m = await exchange(id, packet);
  const latencyMs = performance.now() - started;
  results.push(m === null
    ? { name: q.name, type: q.type, rcode: 'TIMEOUT', truncated: false, answers: [], latencyMs, receivedAt: Date.now() }
    : {
      name: q.name,
      type: q.type,
      rcode: m.rcode,
      truncated: m.truncated,
      answers: m.answers.filter((a) => a.type !== 'OPT').map((a) => {
        const r = a as { name: string; type: string; ttl?: number; data?: unknown };
        return { name: r.name, type: r.type, ttl: r.ttl ?? 0, data: Buffer.isBuffer(r.data) ? r.data.toString('hex') : Array.isArray(r.data) ? r.data.map(String).join('') : String(r.data) };
      }),
      latencyMs,
      receivedAt: Date.now(),
    });
}
process.stdout.write(JSON.stringify(results) + '\n');
