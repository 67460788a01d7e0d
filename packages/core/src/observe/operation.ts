/**
 * Operations as telemetry sees them: {@link runOperation} times a piece of work as one operation (a span
 * and a duration sample), nested in the one it runs within, and {@link phaseTimer} reports the phases of
 * the current operation (restore, agent, ...) as it always logged them.
 */
import { isRamifyError } from '@ramify/contracts';
import { NO_TELEMETRY, type TelemetryAttributes } from '../ports/telemetry.js';
import type { Core } from '../context.js';
import { currentCallContext, withCallContext } from './call-context.js';

/** What {@link runOperation} runs. */
export interface OperationSpec {
  /** `create`, `pause`, ... (core's use-cases), or the route of an API call. */
  name: string;
  /** The sandbox it is about, when one is (a create learns its id later: `set` it then). */
  sandboxId?: string | null;
  attributes?: TelemetryAttributes;
}

/**
 * Whether anything observes operations: events are recorded or telemetry is wired. When nothing does,
 * operations and call contexts cost nothing (no AsyncLocalStorage at all: the daemon as it was before).
 */
export function observing(core: Pick<Core, 'telemetry' | 'options'>): boolean {
  return core.options.events === 'record' || core.telemetry !== NO_TELEMETRY;
}

/**
 * Run `fn` as operation `spec.name` of `core.telemetry`: begun now, child of the current one, ended with the
 * RamifyError code `fn` threw (`INTERNAL` for anything else); the call context's `task` names it for what
 * runs inside. `fn`'s own result or error passes through. Just `fn()` when nothing is {@link observing}.
 */
export async function runOperation<T>(core: Pick<Core, 'telemetry' | 'options'>, spec: OperationSpec, fn: () => Promise<T>): Promise<T> {
  if (!observing(core)) return fn();
  const sandboxId = spec.sandboxId ?? null;
  const attributes = sandboxId === null ? (spec.attributes ?? {}) : { 'ramify.sandbox_id': sandboxId, ...spec.attributes };
  const operation = core.telemetry.begin(spec.name, attributes, currentCallContext().operation);
  try {
    const result = await withCallContext({ operation, task: { name: spec.name, sandboxId } }, fn);
    operation.end({ errorCode: null });
    return result;
  } catch (err) {
    operation.end({ errorCode: isRamifyError(err) ? err.code : 'INTERNAL' });
    throw err;
  }
}

/**
 * Run `fn` as phase `name` of the current telemetry operation, a phase that has phases of its own: what
 * the phase timers inside `fn` report (and the phases they run) nests under it, so a create's trace reads
 * `create` → `start` → `bringUp` → `restore`, not one flat row. Begun at `options.startMs`
 * (`performance.now()`, default now), ended when `fn` settles (with the RamifyError code it threw).
 * Work side by side (a fork's children) runs each in its own phase. Just `fn()` outside an operation.
 */
export async function runPhase<T>(name: string, fn: () => Promise<T>, options: { startMs?: number; attributes?: TelemetryAttributes } = {}): Promise<T> {
  const operation = currentCallContext().operation;
  if (operation === null) return fn();
  const phase = operation.beginPhase(name, options.startMs ?? performance.now(), options.attributes);
  try {
    const result = await withCallContext({ operation: phase }, fn);
    phase.end({ errorCode: null });
    return result;
  } catch (err) {
    phase.end({ errorCode: isRamifyError(err) ? err.code : 'INTERNAL' });
    throw err;
  }
}

/**
 * Phase durations of one operation, for debug logs that say where a create, resume, fork or pause spends
 * its time: `mark('restoreMs')` records the milliseconds since the previous mark, and reports the phase
 * (`restore`) to the current telemetry operation, if any. Work that runs side by side is timed with
 * `overlap('egressMs', startedAt)` (a `performance.now()` value): its own duration and span, without
 * moving the sequential marks; `mark(name, { span: false })` then closes the joint phase for the log only.
 * `within('startMs', fn)` is a mark whose phase has phases of its own: `fn` runs in it ({@link runPhase}),
 * from the previous mark to `fn`'s end.
 */
export function phaseTimer(): {
  mark: (name: string, options?: { span?: boolean }) => void;
  overlap: (name: string, startedAt: number) => void;
  within: <T>(name: string, fn: () => Promise<T>) => Promise<T>;
  phases: Record<string, number>;
} {
  const phases: Record<string, number> = {};
  const operation = currentCallContext().operation;
  let last = performance.now();
  return {
    phases,
    async within<T>(name: string, fn: () => Promise<T>): Promise<T> {
      const startedAt = last;
      try {
        return await runPhase(name.replace(/Ms$/, ''), fn, { startMs: startedAt });
      } finally {
        last = performance.now();
        phases[name] = Math.round(last - startedAt);
      }
    },
    mark(name: string, options?: { span?: boolean }): void {
      const now = performance.now();
      phases[name] = Math.round(now - last);
      if (options?.span !== false) operation?.phase(name.replace(/Ms$/, ''), last, now);
      last = now;
    },
    overlap(name: string, startedAt: number): void {
      const now = performance.now();
      phases[name] = Math.round(now - startedAt);
      operation?.phase(name.replace(/Ms$/, ''), startedAt, now);
    },
  };
}
