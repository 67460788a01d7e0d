/**
 * Traces over OTLP/HTTP (`ramify serve --otlp-endpoint URL`): every API call is a span (`POST
 * /v1/sandboxes`), the core operation it runs a child (`create`), and that operation's phases children of
 * it (`network`, `egress`, `restore`, `agent`, `identity`, ... from core's phase timer). Off by default, and
 * then nothing of OpenTelemetry is loaded: {@link startTracing} imports the SDK when called. No global is
 * registered (two daemons may share a process): spans link to their parents through core's call context.
 * Spans are batched and exported every `exportIntervalMs`; export failures are the exporter's (dropped).
 */
import type { Logger, Telemetry, TelemetryAttributes, TelemetryOperation } from '@ramify/core';

export interface TracingOptions {
  /**
   * The collector: its base URL (`http://127.0.0.1:4318`, traces go to `/v1/traces` under it) or the
   * full traces URL (ending in `/v1/traces`).
   */
  endpoint: string;
  /** `service.name` of the spans; default `ramify`. */
  serviceName?: string;
  /** Batch export interval, ms; default 5000 (OpenTelemetry's own default: one export per 5 s, not per second). */
  exportIntervalMs?: number;
  logger: Logger;
}

export interface Tracing {
  readonly telemetry: Telemetry;
  /** The URL spans are posted to. */
  readonly url: string;
  /** Export what is buffered now. */
  flush(): Promise<void>;
  /** Flush, then stop exporting. */
  shutdown(): Promise<void>;
}

/** The traces URL of an `--otlp-endpoint` value. @throws Error when it is not an http(s) URL. */
export function otlpTracesUrl(endpoint: string): string {
  const url = new URL(endpoint);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`the OTLP endpoint must be an http:// or https:// URL, not '${endpoint}'`);
  if (url.pathname.endsWith('/v1/traces')) return url.toString();
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/traces`;
  return url.toString();
}

/** Load the OpenTelemetry SDK and start exporting; resolves with the telemetry to hand core. */
export async function startTracing(options: TracingOptions): Promise<Tracing> {
  const url = otlpTracesUrl(options.endpoint);
  const [api, sdk, exporterModule, resources] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const exporter = new exporterModule.OTLPTraceExporter({ url });
  const provider = new sdk.BasicTracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': options.serviceName ?? 'ramify' }),
    spanProcessors: [new sdk.BatchSpanProcessor(exporter, { scheduledDelayMillis: options.exportIntervalMs ?? 5000 })],
  });
  const tracer = provider.getTracer('ramify');
  const epochMs = (performanceMs: number): number => performance.timeOrigin + performanceMs;
  type ApiSpan = ReturnType<typeof tracer.startSpan>;

  const operationOf = (span: ApiSpan): TelemetryOperation & { span: ApiSpan } => ({
    span,
    phase: (name, startMs, endMs) => {
      tracer.startSpan(name, { startTime: epochMs(startMs), attributes: { 'ramify.phase': true } }, api.trace.setSpan(api.ROOT_CONTEXT, span)).end(epochMs(endMs));
    },
    beginPhase: (name, startMs, attributes) =>
      operationOf(tracer.startSpan(name, { startTime: epochMs(startMs), attributes: { 'ramify.phase': true, ...attributes } }, api.trace.setSpan(api.ROOT_CONTEXT, span))),
    set: (attributes: TelemetryAttributes) => void span.setAttributes(attributes),
    end: ({ errorCode }) => {
      if (errorCode !== null) {
        span.setAttribute('ramify.error_code', errorCode);
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: errorCode });
      }
      span.end();
    },
  });
  const telemetry: Telemetry = {
    begin: (name, attributes, parent) => {
      const parentSpan = (parent as { span?: ApiSpan } | null)?.span;
      const context = parentSpan ? api.trace.setSpan(api.ROOT_CONTEXT, parentSpan) : api.ROOT_CONTEXT;
      const kind = 'http.route' in attributes ? api.SpanKind.SERVER : api.SpanKind.INTERNAL;
      return operationOf(tracer.startSpan(name, { attributes, kind }, context));
    },
  };
  options.logger.info('tracing: exporting spans over OTLP/HTTP', { url });
  return {
    telemetry,
    url,
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
