/**
 * `ramify serve --metrics-listen ADDR:PORT`: a listener of its own serving `GET /metrics` without auth,
 * for a Prometheus scraper on a trusted network (off by default; bind it to loopback or a private
 * address). Anything else there is 404.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@ramify/core';
import type { DaemonMetrics } from './metrics.js';

export interface MetricsListener {
  /** `host:port` listened on. */
  address: string;
  close(): Promise<void>;
}

/** Listen on `host:port` (0: a free port). Rejects when the address is taken. */
export async function startMetricsListener(metrics: DaemonMetrics, listen: { host: string; port: number }, logger: Logger): Promise<MetricsListener> {
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    metrics.render().then(
      ({ contentType, text }) => res.writeHead(200, { 'content-type': contentType }).end(text),
      (err: unknown) => {
        logger.error('metrics: rendering failed', { error: err instanceof Error ? err.message : String(err) });
        res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  const where = `${address.includes(':') ? `[${address}]` : address}:${port}`;
  logger.info('metrics listener ready (no auth)', { address: where });
  return { address: where, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
