/**
 * A Telemetry that records what core reports: each operation begun (name, attributes, parent), its
 * phases, and how it ended. For core's tests of what becomes a span or a duration sample; the daemon's
 * real sinks (prom-client, OpenTelemetry) are covered by the real-daemon tests.
 */
import type { Telemetry, TelemetryAttributes, TelemetryOperation } from '../ports/telemetry.js';
import { createTestWorld, type TestWorld } from './world.js';

/** One operation as recorded. */
export interface RecordedOperation {
  name: string;
  attributes: TelemetryAttributes;
  parent: RecordedOperation | null;
  /** Leaf phases reported with `phase()`, in order. */
  phases: string[];
  /** A phase begun with `beginPhase()` (it has phases of its own); false for an operation. */
  isPhase: boolean;
  /** Still running: undefined; ended: the error code (null for success). */
  errorCode?: string | null;
}

/** {@link Telemetry} that keeps every operation in {@link RecordingTelemetry.operations}. */
export class RecordingTelemetry implements Telemetry {
  readonly operations: RecordedOperation[] = [];

  begin(name: string, attributes: TelemetryAttributes, parent: TelemetryOperation | null): TelemetryOperation {
    return this.#record(name, attributes, parent ? (this.#records.get(parent) ?? null) : null, false);
  }

  /** The operations named `name`. */
  named(name: string): RecordedOperation[] {
    return this.operations.filter((o) => o.name === name);
  }

  /** The operations and phases begun under `parent`, in order. */
  childrenOf(parent: RecordedOperation): RecordedOperation[] {
    return this.operations.filter((o) => o.parent === parent);
  }

  #record(name: string, attributes: TelemetryAttributes, parent: RecordedOperation | null, isPhase: boolean): TelemetryOperation {
    const record: RecordedOperation = { name, attributes: { ...attributes }, parent, phases: [], isPhase };
    this.operations.push(record);
    const operation: TelemetryOperation = {
      phase: (phase) => void record.phases.push(phase),
      beginPhase: (phase, _startMs, attrs) => this.#record(phase, attrs ?? {}, record, true),
      set: (attrs) => void Object.assign(record.attributes, attrs),
      end: ({ errorCode }) => {
        if (record.errorCode !== undefined) throw new Error(`operation ${name} ended twice`);
        record.errorCode = errorCode;
      },
    };
    this.#records.set(operation, record);
    return operation;
  }

  readonly #records = new WeakMap<TelemetryOperation, RecordedOperation>();
}

/** A fresh test world whose core reports to a {@link RecordingTelemetry} (so it observes operations). */
export async function createRecordedWorld(options: Parameters<typeof createTestWorld>[0] = {}): Promise<{ world: TestWorld; telemetry: RecordingTelemetry }> {
  const world = await createTestWorld(options);
  const telemetry = new RecordingTelemetry();
  world.core.telemetry = telemetry;
  return { world, telemetry };
}
