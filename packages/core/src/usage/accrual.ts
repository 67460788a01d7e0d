/**
 * Metering arithmetic, pure: which meter a sandbox's state runs, how time amounts and counter deltas are
 * spread over UTC hours, and how a counter reading turns into a delta (a new runtime instance, or a
 * counter that went backwards, counts from zero).
 */
import type { SandboxState } from '@ramify/contracts';
import type { UsageAmounts } from '../ports/store.js';
import { HOLDING_STATES } from '../teams/quota.js';

/** What a sandbox's time counts as: `running` (holding CPU and memory), `paused` (holding its image), or nothing. */
export type MeterClass = 'running' | 'paused' | 'none';

/** The meter class of a state: creating, running, pausing and resuming hold CPU and memory; paused holds its image. */
export function meterClassOf(state: SandboxState): MeterClass {
  if (HOLDING_STATES.includes(state)) return 'running';
  return state === 'paused' ? 'paused' : 'none';
}

export const HOUR_MS = 3_600_000;

/** Start of the UTC hour holding `ms`. */
export const hourOf = (ms: number): number => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** `ms` rounded up to a UTC hour start. */
export const hourCeil = (ms: number): number => Math.ceil(ms / HOUR_MS) * HOUR_MS;

/** Amounts of one hour (`hour`: ms at its start). */
export type HourAmounts = { hour: number } & Partial<UsageAmounts>;

/** The UTC hours [from, to) spans, with the ms of it in each; empty when `to <= from`. */
export function splitHours(from: number, to: number): Array<{ hour: number; ms: number }> {
  const out: Array<{ hour: number; ms: number }> = [];
  for (let t = from; t < to; ) {
    const hour = hourOf(t);
    const end = Math.min(to, hour + HOUR_MS);
    out.push({ hour, ms: end - t });
    t = end;
  }
  return out;
}

/** The rates a sandbox's time is charged at: its memory while running, its pause image while paused. */
export interface TimeRates {
  memoryMB: number;
  /** Size of its pause image, bytes (0 when unknown). */
  pausedImageBytes: number;
}

/** Time amounts of [from, to) spent in `cls`, per hour: running time and MiB·ms, or paused time and byte·ms. */
export function timeAmounts(cls: MeterClass, from: number, to: number, rates: TimeRates): HourAmounts[] {
  if (cls === 'none') return [];
  return splitHours(from, to).map(({ hour, ms }) =>
    cls === 'running' ? { hour, runningMs: ms, memoryMiBMs: ms * rates.memoryMB } : { hour, pausedMs: ms, diskByteMs: ms * rates.pausedImageBytes },
  );
}

/** Counter deltas of one reading. */
export interface CounterDeltas {
  cpuUs: number;
  netInBytes: number;
  netOutBytes: number;
  /** The reading's peak memory, bytes (0: unknown). */
  memoryPeakBytes: number;
}

/**
 * Spread counter deltas over the hours of [from, to] in proportion to the time in each (whole units, the
 * remainder in the last hour); all in the hour of `to` when the span is empty. The peak goes to every hour.
 */
export function spreadDeltas(d: CounterDeltas, from: number, to: number): HourAmounts[] {
  const hours = from < to ? splitHours(from, to) : [{ hour: hourOf(to), ms: 1 }];
  const total = hours.reduce((sum, h) => sum + h.ms, 0);
  const given = { cpuUs: 0, netInBytes: 0, netOutBytes: 0 };
  return hours.map((h, i) => {
    const share = (key: keyof typeof given): number => {
      const value = i === hours.length - 1 ? d[key] - given[key] : Math.floor((d[key] * h.ms) / total);
      given[key] += value;
      return value;
    };
    return { hour: h.hour, cpuUs: share('cpuUs'), netInBytes: share('netInBytes'), netOutBytes: share('netOutBytes'), memoryPeakBytes: d.memoryPeakBytes };
  });
}

/**
 * CPU used since the previous reading, µs: the difference on the same instance, else (a new instance, or
 * none before) the whole counter of the new one, which started near zero.
 */
export function cpuDelta(previous: { instance: string | null; cpuUs: number | null } | null, instance: string, cpuUs: number): number {
  if (previous && previous.instance === instance && previous.cpuUs !== null && cpuUs >= previous.cpuUs) return cpuUs - previous.cpuUs;
  return cpuUs;
}

/**
 * Bytes since the previous reading of a link counter: the difference; the whole counter when it went
 * backwards (the link was made again); 0 at the first reading (a slot's link may be older than the
 * sandbox: the first reading is the baseline).
 */
export function linkDelta(previous: number | null, current: number): number {
  if (previous === null) return 0;
  return current >= previous ? current - previous : current;
}
