/**
 * The fake internet's servers. Runs as its own process inside the rig's namespace:
 * `node fake-internet-server.js CONFIG.json`. Reports one JSON object per line on stdout
 * (`{"ready":true}`, `{"event":{...}}`, `{"flushed":N}`, `{"fatal":"..."}`); reads `{"flush":N}` lines on
 * stdin and exits when stdin closes.
 */
import { createSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { createSecureContext, TLSSocket } from 'node:tls';
import * as dnsPacket from 'dns-packet';
import type { Answer, Packet } from 'dns-packet';
import { frameForTcp, takeTcpFrames, RCODE } from '../egress/dns/dns-wire.js';
import type { FakeInternetEvent, FakeInternetServerConfig, FakeZoneEntry } from './fake-internet-types.js';

type Distribute<T> = T extends unknown ? Omit<T, 'at'> : never;

const config = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as FakeInternetServerConfig;
const write = (line: object): void => void process.stdout.write(JSON.stringify(line) + '\n');
const emit = (event: Distribute<FakeInternetEvent>): void => write({ event: { ...event, at: Date.now() } });

let nextConn = 1;
const connOf = new WeakMap<object, { conn: number; sni: string | null }>();
const endpoints = (s: Socket, conn: number) => ({ conn, local: s.localAddress ?? '', localPort: s.localPort ?? 0, remote: s.remoteAddress ?? '', remotePort: s.remotePort ?? 0 });

/**
 * Accept raw TCP on `address:port`, log the connection and its close, hand the socket to `use`
 * (which may return a function to run at close, before the close is logged).
 */
function listenTcp(address: string, port: number, service: 'http' | 'https' | 'echo', use: (socket: Socket, conn: number) => (() => void) | void): Promise<Server> {
  const server = createTcpServer((socket) => {
    const conn = nextConn++;
    const where = endpoints(socket, conn);
    emit({ kind: 'connection', service, ...where });
    socket.on('error', () => undefined);
    const atClose = use(socket, conn);
    socket.on('close', () => {
      atClose?.();
      emit({ kind: 'connection-closed', service, ...where, bytesIn: socket.bytesRead, bytesOut: socket.bytesWritten });
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: address, port }, () => resolve(server));
  });
}

function httpHandler(service: 'http' | 'https') {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const info = connOf.get(req.socket) ?? { conn: 0, sni: null };
    const host = req.headers.host ?? null;
    emit({ kind: 'http-request', service, ...endpoints(req.socket, info.conn), method: req.method ?? '', path: req.url ?? '', host, sni: info.sni });
    res.setHeader('connection', 'close');
    res.setHeader('content-type', 'text/plain');
    res.end(`hello from ${req.socket.localAddress}:${req.socket.localPort} host=${host ?? ''} sni=${info.sni ?? ''}\n`);
  };
}

const http = createHttpServer(httpHandler('http'));
const https = createHttpServer(httpHandler('https'));
const secureContext = createSecureContext({ cert: config.tls.certPem, key: config.tls.keyPem });

async function startWeb(): Promise<void> {
  for (const host of config.web) {
    await listenTcp(host.address, host.httpPort, 'http', (socket, conn) => {
      connOf.set(socket, { conn, sni: null });
      http.emit('connection', socket);
    });
    await listenTcp(host.address, host.httpsPort, 'https', (socket, conn) => {
      const info = { conn, sni: null as string | null };
      const tls = new TLSSocket(socket, {
        isServer: true,
        secureContext,
        // Called with the ClientHello's server name, even when the handshake later fails.
        SNICallback: (servername, cb) => {
          info.sni = servername;
          cb(null, secureContext);
        },
      });
      connOf.set(tls, info);
      const where = endpoints(socket, conn);
      let reported = false;
      const report = (outcome: 'handshake' | 'failed', error?: string): void => {
        if (reported) return;
        reported = true;
        emit({ kind: 'tls', ...where, sni: info.sni, outcome, ...(error ? { error } : {}) });
      };
      tls.on('secure', () => report('handshake'));
      tls.on('error', (err: Error) => report('failed', err.message));
      https.emit('connection', tls);
      // A client that gives up mid-handshake (e.g. rejects the certificate) raises no event on the server side.
      return () => report('failed');
    });
  }
  for (const echo of config.echo) await listenTcp(echo.address, echo.port, 'echo', (socket) => {
    socket.pipe(socket);
  });
}

const zone = new Map(Object.entries(config.zone).map(([name, entry]) => [name.toLowerCase().replace(/\.$/, ''), entry]));

/** Records for `name`/`type`, following CNAMEs inside the zone. */
function records(name: string, type: string): { rcode: keyof typeof RCODE; answers: Answer[] } {
  let entry: FakeZoneEntry | undefined = zone.get(name);
  if (!entry) return { rcode: 'NXDOMAIN', answers: [] };
  if (entry.rcode) return { rcode: entry.rcode, answers: [] };
  const answers: Answer[] = [];
  for (let owner = name, hops = 0; entry && hops < 8; hops++) {
    const ttl = entry.ttl ?? 300;
    if (entry.cname && type !== 'CNAME') {
      answers.push({ type: 'CNAME', name: owner, ttl, data: entry.cname });
      owner = entry.cname.toLowerCase();
      entry = zone.get(owner);
      continue;
    }
    if (type === 'A' || type === 'ANY') answers.push(...(entry.a ?? []).map((data): Answer => ({ type: 'A', name: owner, ttl, data })));
    if (type === 'AAAA' || type === 'ANY' || (type === 'A' && entry.aaaaInAnswer)) answers.push(...(entry.aaaa ?? []).map((data): Answer => ({ type: 'AAAA', name: owner, ttl, data })));
    if (type === 'TXT') answers.push(...(entry.txt ?? []).map((data): Answer => ({ type: 'TXT', name: owner, ttl, data })));
    if (type === 'CNAME' && entry.cname) answers.push({ type: 'CNAME', name: owner, ttl, data: entry.cname });
    break;
  }
  return { rcode: 'NOERROR', answers };
}

async function dnsReply(raw: Buffer, transport: 'udp' | 'tcp', remote: string, remotePort: number): Promise<Buffer | null> {
  let query: Packet;
  try {
    query = dnsPacket.decode(raw);
  } catch {
    return null;
  }
  const q = query.questions?.[0];
  if (!q) return null;
  const name = q.name.toLowerCase().replace(/\.$/, '');
  emit({ kind: 'dns-query', transport, name, type: q.type, local: config.dns.address, localPort: config.dns.port, remote, remotePort });
  const entry = zone.get(name);
  if (entry?.delayMs) await new Promise((r) => setTimeout(r, entry.delayMs));
  const truncate = transport === 'udp' && entry?.truncateUdp === true;
  const { rcode, answers } = records(name, q.type);
  return dnsPacket.encode({
    type: 'response',
    id: query.id,
    flags: dnsPacket.AUTHORITATIVE_ANSWER | ((query.flags ?? 0) & dnsPacket.RECURSION_DESIRED) | dnsPacket.RECURSION_AVAILABLE
      | (truncate ? dnsPacket.TRUNCATED_RESPONSE : 0) | RCODE[rcode],
    questions: query.questions,
    answers: truncate ? [] : answers,
  });
}

async function startDns(): Promise<void> {
  const { address, port } = config.dns;
  const udp = createSocket('udp4');
  udp.on('message', (msg, rinfo) => {
    void dnsReply(msg, 'udp', rinfo.address, rinfo.port).then((reply) => reply && udp.send(reply, rinfo.port, rinfo.address));
  });
  await new Promise<void>((resolve, reject) => {
    udp.once('error', reject);
    udp.bind(port, address, () => resolve());
  });
  const tcp = createTcpServer((socket) => {
    let buffer: Buffer = Buffer.alloc(0);
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      const { frames, rest } = takeTcpFrames(Buffer.concat([buffer, chunk]));
      buffer = rest;
      for (const frame of frames) {
        void dnsReply(frame, 'tcp', socket.remoteAddress ?? '', socket.remotePort ?? 0).then((reply) => reply && !socket.destroyed && socket.write(frameForTcp(reply)));
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    tcp.once('error', reject);
    tcp.listen({ host: address, port }, () => resolve());
  });
}

createInterface({ input: process.stdin })
  .on('line', (line) => {
    const msg = JSON.parse(line) as { flush?: number };
    // Everything that was logged before this line was read is already on stdout, in order.
    if (msg.flush !== undefined) setImmediate(() => write({ flushed: msg.flush }));
  })
  .on('close', () => process.exit(0));

Promise.all([startWeb(), startDns()]).then(
  () => write({ ready: true }),
  (err: Error) => {
    write({ fatal: err.message });
    process.exit(1);
  },
);
