/**
 * Loopback peers of real-events.test.ts: webhook receivers (one that answers 200, one that answers 500
 * then 200, one that never answers), an OTLP/HTTP collector decoding the exporter's JSON, a DNS server
 * the daemon's policy resolver forwards to, and a Prometheus scrape parsed with
 * `parse-prometheus-text-format`. Test support only.
 */
import { createSocket } from 'node:dgram';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import * as dnsPacket from 'dns-packet';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';

/** One request a receiver got: its headers and the exact body bytes. */
export interface Received {
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/** A loopback HTTP server recording what it gets; `answer` decides each response (null: never answer). */
export interface Peer {
  url: string;
  received: Received[];
  /** Requests held open without an answer, now. */
  readonly hung: number;
  close(): Promise<void>;
}

/** Start a peer on 127.0.0.1; `answer(n)` is the status for the n-th request (0-based), or null to hang. */
export async function startPeer(answer: (n: number, body: Buffer) => number | null): Promise<Peer> {
  const received: Received[] = [];
  const held = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const status = answer(received.length, body);
      received.push({ headers: req.headers, body });
      if (status === null) {
        held.add(res);
        res.on('close', () => held.delete(res));
        return;
      }
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    get hung() {
      return held.size;
    },
    close: async () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A span as the OTLP/HTTP JSON exporter sends it (the fields the test reads). */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: Array<{ key: string; value: { stringValue?: string; intValue?: string | number; boolValue?: boolean } }>;
}

/** Every span in OTLP/HTTP JSON export requests (`ExportTraceServiceRequest`). */
export function spansOf(received: Received[]): OtlpSpan[] {
  const spans: OtlpSpan[] = [];
  for (const { body } of received) {
    const request = JSON.parse(body.toString('utf8')) as { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: OtlpSpan[] }> }> };
    for (const rs of request.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans.push(...(ss.spans ?? []));
  }
  return spans;
}

/** A family of a parsed scrape. */
export interface MetricFamily {
  name: string;
  type: string;
  metrics: Array<{ value?: string; labels?: Record<string, string>; buckets?: Record<string, string> }>;
}

const parsePrometheus = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => MetricFamily[];

/** Parse exposition text with `parse-prometheus-text-format` (throws on text it cannot read). */
export function parseMetrics(text: string): MetricFamily[] {
  return parsePrometheus(text);
}

/** The value of `name{labels}` in a parsed scrape (0 when the series is absent). */
export function sample(families: MetricFamily[], name: string, labels: Record<string, string>): number {
  const family = families.find((f) => f.name === name);
  const metric = family?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return metric?.value === undefined ? 0 : Number(metric.value);
}

/** A loopback DNS server on UDP (`dns-packet`): SERVFAIL for names starting `broken.`, NXDOMAIN for every other. */
export interface DnsUpstreamPeer {
  address: string;
  port: number;
  /** Names asked, in order. */
  asked: string[];
  close(): Promise<void>;
}

/** Start a {@link DnsUpstreamPeer} on 127.0.0.1. */
export async function startDnsUpstream(): Promise<DnsUpstreamPeer> {
  const socket = createSocket('udp4');
  const asked: string[] = [];
  socket.on('message', (msg, rinfo) => {
    const query = dnsPacket.decode(msg);
    const question = query.questions?.[0];
    if (!question) return;
    asked.push(question.name);
    const rcode = question.name.startsWith('broken.') ? 'SERVFAIL' : 'NXDOMAIN';
    // dns-packet takes the RCODE in the low bits of `flags` (its `rcode` field is for decoding).
    const flags = dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | (rcode === 'SERVFAIL' ? 2 : 3);
    socket.send(dnsPacket.encode({ id: query.id, type: 'response', flags, questions: [question] }), rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: '127.0.0.1',
    port: socket.address().port,
    asked,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
