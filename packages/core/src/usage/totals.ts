/**
 * Per-sandbox usage totals: the amounts written to the store plus the time not written yet (a live
 * sandbox's time since its meter's `timeAt`, which the next state change or nothing at all would write:
 * it is exact now). Shared by the usage report, the fork tree and budgets.
 */
import type { UsageFigures } from '@ramify/contracts';
import type { Core } from '../context.js';
import type { SandboxRecord, UsageAmounts } from '../ports/store.js';
import { meterClassOf, timeAmounts, type HourAmounts } from './accrual.js';

/** All amounts zero. */
export const noAmounts = (): UsageAmounts => ({ runningMs: 0, pausedMs: 0, cpuUs: 0, memoryMiBMs: 0, diskByteMs: 0, netInBytes: 0, netOutBytes: 0, memoryPeakBytes: 0 });

/** Add `b` into `a` (the peak is a maximum). */
export function addAmounts(a: UsageAmounts, b: Partial<UsageAmounts>): UsageAmounts {
  for (const key of Object.keys(a) as Array<keyof UsageAmounts>) {
    const v = b[key] ?? 0;
    a[key] = key === 'memoryPeakBytes' ? Math.max(a[key], v) : a[key] + v;
  }
  return a;
}

/** The API's figures of some amounts (seconds, MiB·s, byte·s). */
export function toFigures(a: UsageAmounts): UsageFigures {
  return {
    runningSeconds: a.runningMs / 1000,
    pausedSeconds: a.pausedMs / 1000,
    cpuSeconds: a.cpuUs / 1e6,
    memoryMiBSeconds: a.memoryMiBMs / 1000,
    memoryPeakBytes: a.memoryPeakBytes,
    diskByteSeconds: a.diskByteMs / 1000,
    netInBytes: a.netInBytes,
    netOutBytes: a.netOutBytes,
  };
}

/**
 * Time amounts of `records` not written yet, per sandbox and hour, from each one's meter `timeAt` (its
 * `createdAt` without a meter) to `until`, under its current meter class. Empty with metering off.
 */
export async function unwrittenTime(core: Pick<Core, 'store' | 'meter'>, records: readonly SandboxRecord[], until: number): Promise<Map<string, HourAmounts[]>> {
  const out = new Map<string, HourAmounts[]>();
  const live = records.filter((r) => meterClassOf(r.state) !== 'none');
  if (!core.meter.enabled || live.length === 0) return out;
  const meters = new Map((await core.store.getMeters(live.map((r) => r.id))).map((m) => [m.sandboxId, m]));
  for (const r of live) {
    const cls = meterClassOf(r.state);
    const imageBytes = cls === 'paused' && r.pausedSnapshotId ? ((await core.store.getSnapshot(r.pausedSnapshotId))?.sizeBytes ?? 0) : 0;
    out.set(r.id, timeAmounts(cls, meters.get(r.id)?.timeAt ?? r.createdAt, until, { memoryMB: r.memoryMB, pausedImageBytes: imageBytes }));
  }
  return out;
}

/** Each sandbox's all-time totals now (written amounts plus unwritten time), by id. */
export async function sandboxTotals(core: Pick<Core, 'store' | 'meter' | 'clock'>, records: readonly SandboxRecord[]): Promise<Map<string, UsageAmounts>> {
  const totals = new Map(records.map((r) => [r.id, noAmounts()]));
  if (records.length === 0) return totals;
  for (const sum of await core.store.sumUsage({ sandboxIds: records.map((r) => r.id), fromHour: 0, toHour: Number.MAX_SAFE_INTEGER, byDay: false })) {
    addAmounts(totals.get(sum.sandboxId) ?? noAmounts(), sum);
  }
  for (const [id, hours] of await unwrittenTime(core, records, core.clock.now())) {
    const total = totals.get(id);
    if (total) for (const h of hours) addAmounts(total, h);
  }
  return totals;
}
