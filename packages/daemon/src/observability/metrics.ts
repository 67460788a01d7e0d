/**
 * The daemon's Prometheus metrics (`prom-client`, one registry per daemon, series prefixed `ramify_`),
 * served at `/metrics` (an admin key of the default team) and, when asked, on a listener of their own
 * without auth (`--metrics-listen`):
 * - `ramify_sandboxes{state,runtime}`: sandboxes that are not killed (read from the store at each scrape);
 * - `ramify_operation_duration_seconds{operation,outcome}`: create, pause, resume, fork, snapshot, kill
 *   and exec (a command run over the API, whichever way: REST, the command stream, SDK, CLI, MCP, in the
 *   foreground or the background; from its request to its exit), from core's telemetry operations, and
 *   `ramify_operations_total{operation,outcome}` counting them (what a rate() of them wants, without buckets);
 * - `ramify_errors_total{code}`: API errors answered, by RamifyError code;
 * - `ramify_egress_verdicts_total{verdict,protocol}`: egress verdicts enforcement reported;
 * - `ramify_events_total{type}`: events recorded;
 * - `ramify_instances_lost_total{runtime,reason,noticed_by}`: running sandboxes whose runtime instance was
 *   found gone (`instanceLost` on core's bus; reason `oom`, `exited` or `missing`);
 * - `ramify_queue_size{queue}`: what waits in the daemon's queues (webhook deliveries, events, the
 *   command, egress and ingress logs; {@link DaemonMetrics.addQueue} adds one, e.g. the warm pool);
 * - Node's process metrics (`ramify_process_*`, `ramify_nodejs_*`).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { EgressVerdict, EventHub, SandboxEvents, Store, Telemetry, TelemetryOperation } from '@ramify/core';

/** Core operations whose durations are a histogram (other telemetry operations, e.g. routes, are traces only). */
const TIMED_OPERATIONS: ReadonlySet<string> = new Set(['create', 'pause', 'resume', 'fork', 'snapshot', 'kill', 'exec']);

/** Seconds: 5 ms (an exec) to 2 min (a fork x64 on a loaded host). */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export interface DaemonMetrics {
  /** Feeds the operation histogram; tee it with tracing into core. */
  readonly telemetry: Telemetry;
  /** Count an API error answered with `code`. */
  error(code: string): void;
  /** Count one egress verdict (wired where enforcement reports them). */
  egressVerdict(verdict: Pick<EgressVerdict, 'verdict' | 'protocol'>): void;
  /**
   * Report the size of queue `name` at every scrape (`ramify_queue_size{queue=name}`): the hook for any
   * queue the daemon grows, e.g. `metrics.addQueue('warm_pool', () => pool.size())`.
   */
  addQueue(name: string, size: () => number): void;
  /** Count the events `hub` publishes (`ramify_events_total`); returns the unsubscribe function. */
  countEvents(hub: EventHub): () => void;
  /** Count the lost instances `events` announces (`ramify_instances_lost_total`); returns the unsubscribe function. */
  countLostInstances(events: Pick<SandboxEvents, 'onInstanceLost'>): () => void;
  /** The exposition text, and its content type. */
  render(): Promise<{ contentType: string; text: string }>;
}

/** Make the registry; `store` feeds the sandbox gauge at each scrape. */
export function createMetrics(deps: { store: Pick<Store, 'countSandboxes'> }): DaemonMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'ramify_' });
  const queues = new Map<string, () => number>();
  new Gauge({
    name: 'ramify_sandboxes', help: 'Sandboxes that are not killed, by state and runtime', labelNames: ['state', 'runtime'] as const, registers: [registry],
    async collect() {
      this.reset();
      for (const { state, runtime, count } of await deps.store.countSandboxes()) this.set({ state, runtime }, count);
    },
  });
  const durations = new Histogram({
    name: 'ramify_operation_duration_seconds', help: 'Durations of lifecycle operations and of commands run (exec: request to exit), seconds',
    labelNames: ['operation', 'outcome'] as const, buckets: DURATION_BUCKETS, registers: [registry],
  });
  const operations = new Counter({ name: 'ramify_operations_total', help: 'Lifecycle operations and commands run (exec) ended, by outcome', labelNames: ['operation', 'outcome'] as const, registers: [registry] });
  const errors = new Counter({ name: 'ramify_errors_total', help: 'API errors answered, by error code', labelNames: ['code'] as const, registers: [registry] });
  const verdicts = new Counter({ name: 'ramify_egress_verdicts_total', help: 'Egress verdicts enforcement reported', labelNames: ['verdict', 'protocol'] as const, registers: [registry] });
  const events = new Counter({ name: 'ramify_events_total', help: 'Events recorded, by type', labelNames: ['type'] as const, registers: [registry] });
  const lost = new Counter({
    name: 'ramify_instances_lost_total', help: 'Running sandboxes whose runtime instance was found gone, by runtime, reason and what noticed it',
    labelNames: ['runtime', 'reason', 'noticed_by'] as const, registers: [registry],
  });
  new Gauge({
    name: 'ramify_queue_size', help: 'Items waiting in the daemon\'s queues', labelNames: ['queue'] as const, registers: [registry],
    collect() {
      this.reset();
      for (const [queue, size] of queues) this.set({ queue }, size());
    },
  });
  const telemetry: Telemetry = {
    begin: (name) => {
      if (!TIMED_OPERATIONS.has(name)) return IGNORED;
      const end = durations.startTimer({ operation: name });
      const operation: TelemetryOperation = {
        phase: () => undefined,
        beginPhase: () => IGNORED,
        set: () => undefined,
        end: ({ errorCode }) => {
          const outcome = errorCode === null ? 'ok' : 'error';
          end({ outcome });
          operations.inc({ operation: name, outcome });
        },
      };
      return operation;
    },
  };
  return {
    telemetry,
    error: (code) => errors.inc({ code }),
    egressVerdict: (v) => verdicts.inc({ verdict: v.verdict, protocol: v.protocol }),
    addQueue: (name, size) => void queues.set(name, size),
    countEvents: (hub) => hub.subscribe((event) => events.inc({ type: event.type })),
    countLostInstances: (bus) => bus.onInstanceLost((e) => lost.inc({ runtime: e.sandbox.runtime, reason: e.reason, noticed_by: e.noticedBy })),
    render: async () => ({ contentType: registry.contentType, text: await registry.metrics() }),
  };
}

const IGNORED: TelemetryOperation = { phase: () => undefined, beginPhase: () => IGNORED, set: () => undefined, end: () => undefined };
