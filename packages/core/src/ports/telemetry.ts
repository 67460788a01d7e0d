/**
 * The Telemetry port: how operations (API calls, create, pause, resume, fork, exec, ...) and their phases
 * are timed for the outside world: trace spans (OTLP, when the daemon exports traces) and duration
 * histograms (Prometheus). Core begins and ends operations (`observe/operation.ts`) and reports phases from
 * its phase timer; it never knows which backends listen. {@link NO_TELEMETRY} is the null implementation:
 * a daemon without metrics or traces pays a function call per operation.
 */

/** Attribute values of an operation (span attributes); keep them few and low-cardinality. */
export type TelemetryAttributes = Record<string, string | number | boolean>;

/** One operation in progress (or one of its phases that has phases of its own: {@link TelemetryOperation.beginPhase}). */
export interface TelemetryOperation {
  /** A finished phase of it: `name` from `startMs` to `endMs` (`performance.now()` clock, ms). */
  phase(name: string, startMs: number, endMs: number): void;
  /**
   * Begin a phase of it that has phases of its own (create's `start`, which holds `store`, `bringUp` and
   * `running`), from `startMs` (`performance.now()`) until its `end`: a child span when tracing, never an
   * operation of its own for metrics. Its `phase` and `beginPhase` nest under it.
   */
  beginPhase(name: string, startMs: number, attributes?: TelemetryAttributes): TelemetryOperation;
  /** Add attributes learnt on the way (the sandbox id of a create). */
  set(attributes: TelemetryAttributes): void;
  /** End it; `errorCode`: the RamifyError code it failed with, null when it succeeded. */
  end(outcome: { errorCode: string | null }): void;
}

export interface Telemetry {
  /**
   * Begin operation `name` (`create`, `POST /v1/sandboxes`, ...) at `performance.now()`, as a child of
   * `parent` (the operation it runs within) when given.
   */
  begin(name: string, attributes: TelemetryAttributes, parent: TelemetryOperation | null): TelemetryOperation;
}

const NO_OPERATION: TelemetryOperation = { phase: () => undefined, beginPhase: () => NO_OPERATION, set: () => undefined, end: () => undefined };

/** Telemetry that records nothing. */
export const NO_TELEMETRY: Telemetry = { begin: () => NO_OPERATION };

/** Telemetry that feeds each of `sinks` (metrics and traces together); {@link NO_TELEMETRY} for none. */
export function teeTelemetry(sinks: readonly Telemetry[]): Telemetry {
  if (sinks.length === 0) return NO_TELEMETRY;
  if (sinks.length === 1) return sinks[0] as Telemetry;
  return {
    begin: (name, attributes, parent) => {
      const parents = parent ? (parent as TeeOperation).parts : undefined;
      return teeOperation(sinks.map((sink, i) => sink.begin(name, attributes, parents?.[i] ?? null)));
    },
  };
}

interface TeeOperation extends TelemetryOperation {
  readonly parts: TelemetryOperation[];
}

function teeOperation(parts: TelemetryOperation[]): TeeOperation {
  return {
    parts,
    phase: (phase, start, end) => parts.forEach((p) => p.phase(phase, start, end)),
    beginPhase: (phase, start, attrs) => teeOperation(parts.map((p) => p.beginPhase(phase, start, attrs))),
    set: (attrs) => parts.forEach((p) => p.set(attrs)),
    end: (outcome) => parts.forEach((p) => p.end(outcome)),
  };
}
