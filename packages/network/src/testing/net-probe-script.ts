/**
 * The client of {@link probeFrom}, run inside a test namespace: `node net-probe-script.js < PROBE_JSON`.
 * Prints one JSON {@link NetProbeResult}.
 */
import { createSocket } from 'node:dgram';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import type { NetProbe, NetProbeResult } from './net-probe.js';

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const probe = JSON.parse(Buffer.concat(chunks).toString('utf8')) as NetProbe;
const timeoutMs = probe.timeoutMs ?? 3000;

function attempt(): Promise<NetProbeResult> {
  return new Promise((resolve) => {
    const fail = (err: unknown): void => resolve({ outcome: 'failed', error: (err as NodeJS.ErrnoException).code ?? String((err as Error).message ?? err) });
    setTimeout(() => resolve({ outcome: 'failed', error: 'TIMEOUT' }), timeoutMs).unref();
    if (probe.kind === 'http' || probe.kind === 'https') {
      const common = { host: probe.address, port: probe.port ?? (probe.kind === 'http' ? 80 : 443), path: probe.path ?? '/', headers: { host: probe.host }, agent: false as const };
      const onResponse = (res: import('node:http').IncomingMessage): void => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => resolve({ outcome: 'ok', status: res.statusCode ?? 0, body })).on('error', fail);
      };
      const req = probe.kind === 'http'
        ? httpRequest(common, onResponse)
        : httpsRequest({ ...common, ca: probe.ca, ...(probe.servername === null ? { servername: '' } : { servername: probe.servername }) }, onResponse);
      req.on('error', fail).end();
    } else if (probe.kind === 'tcp') {
      const s = connect({ host: probe.address, port: probe.port }, () => {
        s.destroy();
        resolve({ outcome: 'ok' });
      });
      s.on('error', fail);
    } else {
      const s = createSocket('udp4');
      s.send(Buffer.from(probe.payload ?? 'ramify-probe'), probe.port, probe.address, (err) => {
        s.close();
        if (err) fail(err);
        else resolve({ outcome: 'ok' });
      });
    }
  });
}

process.stdout.write(JSON.stringify(await attempt()) + '\n');
process.exit(0);
