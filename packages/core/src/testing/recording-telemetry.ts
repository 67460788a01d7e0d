/**
 * A Telemetry that records what core reports: each operation begun (name, attributes, parent), its
 * phases, and how it ended. For core's tests of what becomes a span or a duration sample; the daemon's
 * real sinks (prom-client, OpenTelemetry) are covered by the real-daemon tests.
 */
import type { Telemetry, TelemetryAttributes, TelemetryOperation } from '../ports/telemetry.js';

/** One operation as recorded. */
export interface RecordedOperation {
  name: string;
  attributes: TelemetryAttributes;
  parent: RecordedOperation | null;
  /** Leaf phases reported with `phase()`, in order. */
  phases: string[];
  /** Still running: undefined; ended: the error code (null for success). */
  errorCode?: string | null;
}

/** {@link Telemetry} that keeps every operation in {@link RecordingTelemetry.operations}. */
export class RecordingTelemetry implements Telemetry {
  readonly operations: RecordedOperation[] = [];

  begin(name: string, attributes: TelemetryAttributes, parent: TelemetryOperation | null): TelemetryOperation {
    const record: RecordedOperation = { name, attributes: { ...attributes }, parent: parent ? (this.#records.get(parent) ?? null) : null, phases: [] };
    this.operations.push(record);
    const operation: TelemetryOperation = {
      phase: (phase) => void record.phases.push(phase),
      set: (attrs) => void Object.assign(record.attributes, attrs),
      end: ({ errorCode }) => {
        if (record.errorCode !== undefined) throw new Error(`operation ${name} ended twice`);
        record.errorCode = errorCode;
      },
    };
    this.#records.set(operation, record);
    return operation;
  }

  /** The operations named `name`. */
  named(name: string): RecordedOperation[] {
    return this.operations.filter((o) => o.name === name);
  }

  readonly #records = new WeakMap<TelemetryOperation, RecordedOperation>();
}
