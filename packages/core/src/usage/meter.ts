/**
 * The usage meter: what every sandbox uses, per second, written to the store (docs/design/USAGE.md).
 *
 * Two kinds of figures, each written by one path, so neither can count twice:
 * - **Time** (running and paused seconds, memory MiB·s, pause image byte·s) follows the sandbox's state:
 *   when a transition changes its meter class (running ⇄ paused → none), {@link UsageMeter.beforeTransition}
 *   writes the time since the meter's `timeAt` under the old class, then the state is written. Time never
 *   waits for a sample, so it is exact across pause, resume, fork and restarts (a daemon that was down
 *   counts the time the sandbox ran meanwhile at its next write, from the stored `timeAt`).
 * - **Counters** (CPU time from the runtime, bytes in and out from the slot's link, peak memory) are read
 *   every `usageSampleMs` for running sandboxes ({@link UsageMeter.sampleRunning}), once more right before
 *   an instance is checkpointed or killed ({@link UsageMeter.beforeStop}), and when it starts. Each write
 *   stores the raw counters it was computed from with the amounts, in one transaction; the next reading (of
 *   this daemon or the next) subtracts them, so a restart neither drops nor double counts, and a crash
 *   between readings loses nothing the counters still hold (only what an instance did after its last
 *   reading when it died).
 *
 * Readings run one at a time (one lock), so a stop's reading and a sweep never both count the same CPU.
 * With `usageSampleMs` 0 metering is off: nothing is read or written.
 */
import type { Core } from '../context.js';
import { KeyedLock } from '../lifecycle/locks.js';
import type { SandboxState } from '@ramify/contracts';
import type { RuntimeUsage } from '../ports/runtime.js';
import type { SlotTraffic } from '../ports/network.js';
import type { SandboxRecord, UsageWrite } from '../ports/store.js';
import { cpuDelta, linkDelta, meterClassOf, spreadDeltas, timeAmounts } from './accrual.js';
import { MetricsWindow } from './metrics-window.js';

const MIB = 1024 * 1024;

/** The last counter reading of a sandbox (what the next one subtracts). */
interface LastReading {
  at: number;
  instance: string | null;
  cpuUs: number | null;
  netIn: number | null;
  netOut: number | null;
  /** Taken by this process (not loaded from the store: a restarted daemon's first rate spans its downtime). */
  local: boolean;
}

/** One sandbox's raw reading. */
interface Raw {
  record: SandboxRecord;
  usage: RuntimeUsage | null;
  traffic: SlotTraffic | null;
  /** The runtime cannot read counters at all. */
  blind: boolean;
}

type MeterCore = Pick<Core, 'hostId' | 'store' | 'runtimes' | 'network' | 'clock' | 'logger' | 'activity' | 'options'>;

export class UsageMeter {
  readonly #core: MeterCore;
  readonly #locks: KeyedLock;
  readonly #last = new Map<string, LastReading>();
  /** Sandboxes whose CPU use this meter has judged (a rate, or a runtime that cannot say). */
  readonly #judged = new Set<string>();
  /** Live metrics (the last `metricsWindowMs` of samples). */
  readonly metrics: MetricsWindow;

  constructor(core: MeterCore) {
    this.#core = core;
    this.#locks = new KeyedLock(core.hostId);
    this.metrics = new MetricsWindow(core.options.metricsWindowMs);
  }

  /** Whether metering runs (`usageSampleMs` > 0). */
  get enabled(): boolean {
    return this.#core.options.usageSampleMs > 0;
  }

  /**
   * Called by `transition()` before it writes state `to`: when the meter class changes, write the time since
   * the meter's `timeAt` under the old one; when `to` is `running`, take the new instance's first reading.
   * Rejects when the store write fails (the transition is then not made).
   */
  async beforeTransition(record: SandboxRecord, to: SandboxState): Promise<void> {
    if (!this.enabled) return;
    if (meterClassOf(record.state) !== meterClassOf(to)) await this.#locks.run(`time:${record.id}`, () => this.#writeTime(record));
    // The new instance's baseline is taken in the background, queued now (before the state is written):
    // a cgroup read can block for seconds while runsc makes or removes other sandboxes' cgroups (measured
    // 1-4 s on a loaded 2-core host during a fork x8), and a start must not wait for it. Its CPU counter
    // starts with the instance, so a later reading counts the same; later readings queue behind it.
    if (to === 'running') void this.#read([record]).catch((err: unknown) => this.#warn('reading a started sandbox', err, record.id));
    if (to === 'killed') this.forget(record.id);
  }

  /** Resolves once every reading queued so far (a start's baseline in the background) is written. Never rejects. */
  async settle(): Promise<void> {
    await this.#locks.run('counters', async () => undefined);
  }

  /** Called right before the runtime stops the sandbox's instance (checkpoint, kill): its last reading. Never rejects. */
  async beforeStop(record: SandboxRecord): Promise<void> {
    if (!this.enabled) return;
    await this.#read([record]).catch((err: unknown) => this.#warn('reading a stopping sandbox', err, record.id));
  }

  /**
   * Read these sandboxes' counters now and write what they used since their last reading, as a sample
   * does: so a budget check (a fork, a resume, a budget being set) sees its tree's CPU exact up to now, not
   * up to the last sample. A few file reads per sandbox and one store write. Never rejects.
   */
  async readNow(records: readonly SandboxRecord[]): Promise<void> {
    if (!this.enabled || records.length === 0) return;
    await this.#read(records).catch((err: unknown) => this.#warn('reading sandboxes for a budget check', err, records.map((r) => r.id).join(',')));
  }

  /**
   * Take the sandbox's counters as they are now as its baseline, counting nothing: a warm pool sandbox
   * being claimed (what its instance did in the pool is not the new sandbox's use). Never rejects.
   */
  async baseline(record: SandboxRecord): Promise<void> {
    if (!this.enabled) return;
    await this.#read([record], 'baseline').catch((err: unknown) => this.#warn('taking a claimed sandbox\'s baseline', err, record.id));
  }

  /** Read every running sandbox's counters and write them in one store write. @returns the sandboxes read. Rejects when listing or writing fails. */
  async sampleRunning(): Promise<SandboxRecord[]> {
    if (!this.enabled) return [];
    const running: SandboxRecord[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.#core.store.listSandboxes({ states: ['running'], hostId: this.#core.hostId, limit: 500, cursor });
      running.push(...page.sandboxes);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    await this.#read(running);
    return running;
  }

  /**
   * Whether the sandbox's CPU use has been judged since this daemon started: a rate between two readings of
   * one instance, or a runtime that cannot read it; always true with metering off. Auto-pause waits for it.
   */
  cpuJudged(sandboxId: string): boolean {
    return !this.enabled || this.#judged.has(sandboxId);
  }

  /** Forget a killed sandbox's readings and samples. */
  forget(sandboxId: string): void {
    this.#last.delete(sandboxId);
    this.#judged.delete(sandboxId);
    this.metrics.forget(sandboxId);
  }

  /** Write the time since the meter's `timeAt` under the record's meter class, up to now. */
  async #writeTime(record: SandboxRecord): Promise<void> {
    const { store, clock } = this.#core;
    const now = clock.now();
    const [meter] = await store.getMeters([record.id]);
    const from = meter?.timeAt ?? record.createdAt;
    const cls = meterClassOf(record.state);
    const imageBytes = cls === 'paused' && record.pausedSnapshotId ? ((await store.getSnapshot(record.pausedSnapshotId))?.sizeBytes ?? 0) : 0;
    const hours = timeAmounts(cls, from, now, { memoryMB: record.memoryMB, pausedImageBytes: imageBytes });
    await store.recordUsage([{ sandboxId: record.id, hours, meter: { timeAt: Math.max(now, from) } }]);
  }

  /**
   * Read `records`' counters and write the deltas (one lock for every reading: none overlap); `baseline`:
   * write the counters only, as the base of the next reading (no amounts).
   */
  async #read(records: readonly SandboxRecord[], mode: 'count' | 'baseline' = 'count'): Promise<void> {
    if (records.length === 0) return;
    await this.#locks.run('counters', async () => {
      await this.#loadStored(records.map((r) => r.id));
      const raws = await Promise.all(records.map((r) => this.#raw(r)));
      const now = this.#core.clock.now();
      const writes: UsageWrite[] = [];
      const next = new Map<string, LastReading>();
      for (const raw of raws) {
        const planned = this.#plan(raw, now);
        if (!planned) continue;
        if (mode === 'baseline') planned.write.hours = [];
        writes.push(planned.write);
        next.set(raw.record.id, planned.last);
      }
      if (writes.length > 0) await this.#core.store.recordUsage(writes);
      // Only what was written becomes the baseline: a failed write leaves the stored one, so nothing is lost.
      for (const [id, last] of next) this.#last.set(id, last);
    });
  }

  /** Seed the last readings of sandboxes this daemon has not read yet from their stored meters. */
  async #loadStored(ids: string[]): Promise<void> {
    const missing = ids.filter((id) => !this.#last.has(id));
    if (missing.length === 0) return;
    for (const m of await this.#core.store.getMeters(missing)) {
      if (m.sampledAt !== null) this.#last.set(m.sandboxId, { at: m.sampledAt, instance: m.instance, cpuUs: m.cpuUs, netIn: m.netInBytes, netOut: m.netOutBytes, local: false });
    }
  }

  async #raw(record: SandboxRecord): Promise<Raw> {
    const runtime = this.#core.runtimes.find((r) => r.name === record.runtime);
    const network = this.#core.network;
    const [usage, traffic] = await Promise.all([
      runtime?.usage ? runtime.usage(record.id).catch(() => null) : Promise.resolve(null),
      record.slot !== null && network?.trafficBytes ? network.trafficBytes(record.slot).catch(() => null) : Promise.resolve(null),
    ]);
    return { record, usage, traffic, blind: !runtime?.usage };
  }

  /** The write of one reading, and the baseline it leaves; null when nothing could be read. */
  #plan(raw: Raw, now: number): { write: UsageWrite; last: LastReading } | null {
    const { record, usage, traffic } = raw;
    // A runtime that cannot say (no counters, or none readable now): auto-pause judges on the rest.
    if (raw.blind || !usage) this.#judged.add(record.id);
    if (!usage && !traffic) return null;
    const prev = this.#last.get(record.id) ?? null;
    const cpuUs = usage ? cpuDelta(prev, usage.instance, usage.cpuTimeUs) : 0;
    const deltas = {
      cpuUs,
      netInBytes: traffic ? linkDelta(prev?.netIn ?? null, traffic.inBytes) : 0,
      netOutBytes: traffic ? linkDelta(prev?.netOut ?? null, traffic.outBytes) : 0,
      memoryPeakBytes: Math.max(usage?.memoryPeakBytes ?? 0, usage?.memoryUsedBytes ?? 0),
    };
    const last: LastReading = {
      at: now,
      instance: usage?.instance ?? prev?.instance ?? null,
      cpuUs: usage?.cpuTimeUs ?? prev?.cpuUs ?? null,
      netIn: traffic?.inBytes ?? prev?.netIn ?? null,
      netOut: traffic?.outBytes ?? prev?.netOut ?? null,
      local: true,
    };
    if (usage && prev?.local && prev.instance === usage.instance && now > prev.at) this.#sample(record, usage, cpuUs / 1000 / (now - prev.at), now);
    return {
      write: {
        sandboxId: record.id,
        hours: spreadDeltas(deltas, prev?.at ?? now, now),
        meter: { sampledAt: now, instance: last.instance, cpuUs: last.cpuUs, netInBytes: last.netIn, netOutBytes: last.netOut },
      },
      last,
    };
  }

  /** A metrics sample and the CPU judgement of auto-pause (`cores` averaged since the previous reading). */
  #sample(record: SandboxRecord, usage: RuntimeUsage, cores: number, now: number): void {
    this.#judged.add(record.id);
    if (record.autoPause !== null && cores > this.#core.options.autoPauseCpuThreshold) this.#core.activity.touch(record.id);
    const diskTotal = usage.diskUsedBytes !== null && record.diskSizeMB !== null ? record.diskSizeMB * MIB : null;
    this.metrics.add(record.id, {
      at: now,
      cpuCount: record.cpuCount,
      cpuUsedPct: Math.round(Math.min(100, (cores / record.cpuCount) * 100) * 100) / 100,
      memUsed: usage.memoryUsedBytes ?? 0,
      memTotal: record.memoryMB * MIB,
      diskUsed: diskTotal === null ? null : usage.diskUsedBytes,
      diskTotal,
    });
  }

  #warn(what: string, err: unknown, sandboxId: string): void {
    this.#core.logger.warn(`usage meter: ${what} failed`, { sandboxId, error: err instanceof Error ? err.message : String(err) });
  }
}
