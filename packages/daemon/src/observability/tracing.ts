/**
 * Traces over OTLP/HTTP (`ramify serve --otlp-endpoint URL`): every API call is a span (`POST
 * /v1/sandboxes`), the core operation it runs a child (`create`), and that operation's phases children of
 * it (`network`, `egress`, `restore`, `agent`, `identity`, ... from core's phase timer). Off by default, and
 * then nothing of OpenTelemetry is loaded: {@link startTracing} imports the SDK when called. No global is
 * registered (two daemons may share a process): spans link to their parents through core's call context.
 * Spans are batched and exported every `exportIntervalMs`; export failures are the exporter's (dropped).
 * Once told the process's foreground ({@link Tracing.deferExportsWhileBusy}), a batch's export (its JSON
 * encoding and POST, a few ms of the event loop) waits until the foreground has been quiet for
 * {@link EXPORT_QUIET_MS} or the batch has waited {@link EXPORT_MAX_DEFER_MS}, as webhook deliveries do
 * (docs/design/EVENTS.md, "Cost (bench)"): it then does not land on the caller's next call.
 */
import type { Logger, Telemetry, TelemetryAttributes, TelemetryOperation } from '@ramify/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/** The callback of {@link SpanExporter.export}. */
type ExportDone = Parameters<SpanExporter['export']>[1];

/** Foreground quiet a batch export waits for, ms (the webhook dispatcher's `quietMs`). */
export const EXPORT_QUIET_MS = 250;
/** Longest a batch export waits for a quiet foreground, ms (the webhook dispatcher's `maxDeferMs`). */
export const EXPORT_MAX_DEFER_MS = 2_000;

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
  /**
   * From now on hold each batch export until `quietForMs()` (the time the process's foreground has been
   * quiet, ms, 0 while busy: core's `ForegroundWork.quietForMs`) reaches {@link EXPORT_QUIET_MS}, at most
   * {@link EXPORT_MAX_DEFER_MS}. Flushes and the shutdown's export do not wait.
   */
  deferExportsWhileBusy(quietForMs: () => number): void;
}

/**
 * An exporter that holds each batch until the foreground is quiet (see {@link Tracing.deferExportsWhileBusy}),
 * then hands it to `inner`. The batch span processor waits for the export's callback, so batches stay in order.
 */
export class QuietExporter implements SpanExporter {
  quietForMs: (() => number) | null = null;
  /** Export at once (a flush or the shutdown is waiting). */
  #urgent = 0;

  constructor(private readonly inner: SpanExporter) {}

  export(spans: ReadableSpan[], done: ExportDone): void {
    const since = performance.now();
    const attempt = (): void => {
      const quietForMs = this.#urgent > 0 ? Infinity : (this.quietForMs?.() ?? Infinity);
      const leftMs = EXPORT_MAX_DEFER_MS - (performance.now() - since);
      if (quietForMs >= EXPORT_QUIET_MS || leftMs <= 0) return this.inner.export(spans, done);
      setTimeout(attempt, Math.max(1, Math.min(EXPORT_QUIET_MS - quietForMs, leftMs)));
    };
    attempt();
  }

  /** Run `fn` (a flush, the shutdown) with exports not waiting. */
  async urgently<T>(fn: () => Promise<T>): Promise<T> {
    this.#urgent += 1;
    try {
      return await fn();
    } finally {
      this.#urgent -= 1;
    }
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
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
  const exporter = new QuietExporter(new exporterModule.OTLPTraceExporter({ url }));
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
    flush: () => exporter.urgently(() => provider.forceFlush()),
    shutdown: () => exporter.urgently(() => provider.shutdown()),
    deferExportsWhileBusy: (quietForMs) => {
      exporter.quietForMs = quietForMs;
    },
  };
}
