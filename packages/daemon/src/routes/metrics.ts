/**
 * `GET /metrics`: the Prometheus exposition (observability/metrics.ts), for an admin key of the default
 * team (the operator: the series cover every team); a scraper without a key uses `--metrics-listen`.
 */
import { RamifyError } from '@ramify/contracts';
import { requireOperator } from '@ramify/core';
import { route, type RouteSpec } from '../http/route.js';
import type { DaemonMetrics } from '../observability/metrics.js';

/** The route over `metrics`; null: this daemon collects none (503). */
export function metricsRoute(metrics: DaemonMetrics | null): RouteSpec {
  return route({
    operation: 'getMetrics', summary: 'Prometheus metrics (text format 0.0.4), series prefixed ramify_ (an admin key of the default team)',
    description: 'Without a key 401, any other key 403. A scraper without a key: ramify serve --metrics-listen ADDR:PORT serves the same text at /metrics there.',
    response: 'raw', telemetry: 'untraced',
    handler: async ({ actor, reply }) => {
      requireOperator(actor, 'reading metrics');
      if (!metrics) throw new RamifyError('RUNTIME_UNAVAILABLE', 'this daemon collects no metrics');
      const { contentType, text } = await metrics.render();
      return reply.code(200).type(contentType).send(text);
    },
  });
}
