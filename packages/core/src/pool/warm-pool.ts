/**
 * The warm pool (docs/design/POOL.md): sandboxes already restored from a template image, idle, each on
 * its own slot (network namespaces attached) with egress denied and its agent channel open, so that a
 * create claims one instead of restoring. A pooled sandbox has no store row: it belongs to no team, is
 * in no listing, quota or metering, and a daemon restart finds its runtime instance and slot lease
 * orphaned and removes them (reconcile); a clean stop kills it ({@link WarmPool.close}).
 * Refills run one at a time in the background, only after foreground lifecycle calls have been quiet for
 * `warmPoolQuietMs`, so a create, pause or fork never waits behind one that has not started.
 */
import type { RuntimeName, WarmPoolHealth } from '@ramify/contracts';
import type { Core } from '../context.js';
import { newSandboxId } from '../ids.js';
import { bringUp, bringUpsInFlight, releaseResources } from '../lifecycle/bring-up.js';
import { prewarmFreeSlots } from '../lifecycle/prewarm.js';
import { messageOf } from '../lifecycle/records.js';
import { withCause } from '../observe/call-context.js';
import type { SandboxRecord } from '../ports/store.js';
import { AUTO_WINDOW_MS } from '@ramify/contracts';
import { poolTargets, sameKey, useKey, type PoolKey, type PoolTarget } from './targets.js';

/** One pooled sandbox. `claimed`: handed to a create, not yet in the store. */
export interface PooledSandbox extends PoolKey {
  id: string;
  slot: number | null;
  state: 'filling' | 'idle' | 'claimed';
  /** Set by a drain while it was filling: released once the fill ends. */
  stale: boolean;
}

/**
 * What the daemon's log shows of the pool; `GET /v1/health` shows the same less the template names
 * (`WarmPoolHealth`). `memoryMB`: the idle sandboxes' memoryMB (their limit; their use is far less,
 * bench/lifecycle prints the PSS).
 */
export interface WarmPoolStats extends Omit<WarmPoolHealth, 'runtimes'> {
  /** Per template and runtime. */
  templates: Array<{ templateId: string; template: string; runtime: RuntimeName; target: number; idle: number; filling: number }>;
}

/** With nothing to fill, look again this often, ms (a template built meanwhile, an `auto` use an hour old). */
const RECHECK_MS = 5_000;

/** After a failed fill, wait this long before the next, ms (a broken image must not spin the host). */
const FILL_BACKOFF_MS = 30_000;

export class WarmPool {
  readonly #core: Core;
  readonly #entries = new Map<string, PooledSandbox>();
  readonly #recentUse = new Map<string, number>();
  #targets: PoolTarget[] = [];
  #hits = 0;
  #misses = { empty: 0, resources: 0 };
  #timer: NodeJS.Timeout | null = null;
  #timerDueMs = 0;
  /** The shortest delay asked for while a step ran. */
  #asked: number | null = null;
  #running: Promise<void> | null = null;
  #started = false;
  #closed = false;
  #waiters: Array<() => void> = [];

  constructor(core: Core) {
    this.#core = core;
  }

  /** Begin filling (after reconcile). For `auto`, the templates created from in the last hour (from the store) count as used. */
  async start(): Promise<void> {
    if (this.#core.options.warmPool.mode === 'off' || this.#started) return;
    this.#started = true;
    if (this.#core.options.warmPool.mode === 'auto') {
      const since = this.#core.clock.now() - AUTO_WINDOW_MS;
      for (const s of (await this.#core.store.listSandboxes({ limit: 1000 })).sandboxes) {
        if (s.createdAt >= since && s.sourceSnapshotId !== null && (await this.#core.store.getSnapshot(s.sourceSnapshotId))?.kind === 'template') {
          const key = useKey(s.templateId, s.runtime);
          this.#recentUse.set(key, Math.max(this.#recentUse.get(key) ?? 0, s.createdAt));
        }
      }
    }
    this.#schedule(0);
  }

  /**
   * Hand out an idle sandbox matching `key` (it leaves the idle set at once; one whose instance is gone is
   * released and the next tried) and count a hit; else count a miss and return null. Either way the
   * template counts as used (for `auto`) and a refill is scheduled.
   */
  async take(key: PoolKey): Promise<PooledSandbox | null> {
    if (this.#core.options.warmPool.mode === 'off') return null;
    this.#recentUse.set(useKey(key.templateId, key.runtime), this.#core.clock.now());
    this.#schedule();
    for (;;) {
      const idle = [...this.#entries.values()].filter((e) => e.state === 'idle' && e.templateId === key.templateId && e.runtime === key.runtime);
      const match = idle.find((e) => sameKey(e, key));
      if (!match) {
        if (idle.length > 0) this.#misses.resources += 1;
        else this.#misses.empty += 1;
        return null;
      }
      match.state = 'claimed';
      const runtime = this.#core.runtimes.find((r) => r.name === match.runtime);
      if (runtime?.isAlive && !(await runtime.isAlive(match.id).catch(() => false))) {
        this.#core.logger.warn('warm pool: a pooled sandbox had stopped; released', { sandboxId: match.id });
        await this.#release(match);
        continue;
      }
      this.#hits += 1;
      return match;
    }
  }

  /** A claim that could not be completed (its agent was lost): count it as a miss, not a hit. */
  failed(): void {
    this.#hits -= 1;
    this.#misses.empty += 1;
  }

  /** A claimed sandbox is now the store's (its row was inserted): the pool forgets it. */
  settle(id: string): void {
    if (this.#entries.get(id)?.state === 'claimed') this.#entries.delete(id);
  }

  /** A claimed sandbox the create did not use after all (refused by quota): idle again. */
  giveBack(entry: PooledSandbox): void {
    const held = this.#entries.get(entry.id);
    if (held?.state !== 'claimed') return;
    this.#hits -= 1;
    if (this.#closed) void this.#release(held);
    else held.state = 'idle';
  }

  /** The runtime of a sandbox the pool holds (filling, idle or claimed); undefined for any other id. */
  runtimeOf(id: string): RuntimeName | undefined {
    return this.#entries.get(id)?.runtime;
  }

  /** Its instance or agent channel was lost: drop it (a claimed one is left to its create, which fails). */
  lost(id: string): void {
    const entry = this.#entries.get(id);
    if (entry?.state !== 'idle') return;
    this.#core.logger.warn('warm pool: a pooled sandbox was lost; released', { sandboxId: id });
    void this.#release(entry).then(() => this.#schedule());
  }

  /**
   * Recompute what the pool should hold now and release what it no longer should (images a rebuild or a
   * delete replaced, templates no longer wanted): call before the images are collected.
   */
  async drain(): Promise<void> {
    if (!this.#started || this.#closed) return;
    this.#targets = await poolTargets(this.#core, this.#core.options.warmPool, this.#core.options.warmPoolBudgetMB, this.#recentUse);
    await this.#releaseUnwanted();
    this.#schedule();
  }

  /** Resolves once nothing is left to fill, a fill failed, or the pool is closed: for tests and the bench. */
  async filled(): Promise<void> {
    if (this.#closed || !this.#started) return;
    await new Promise<void>((resolve) => {
      this.#waiters.push(resolve);
      this.#timer?.ref();
      this.#schedule(0);
    });
  }

  /** Stop refilling, wait for a fill in flight, then kill every pooled sandbox and free its slot. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running;
    await Promise.all([...this.#entries.values()].filter((e) => e.state !== 'claimed').map((e) => this.#release(e)));
    for (const resolve of this.#waiters.splice(0)) resolve();
  }

  stats(): WarmPoolStats {
    const entries = [...this.#entries.values()];
    const idle = entries.filter((e) => e.state === 'idle');
    return {
      mode: this.#core.options.warmPool.mode,
      budgetMB: this.#core.options.warmPoolBudgetMB,
      hits: this.#hits,
      misses: { ...this.#misses },
      idle: idle.length,
      filling: entries.filter((e) => e.state === 'filling').length,
      memoryMB: idle.reduce((sum, e) => sum + e.memoryMB, 0),
      templates: this.#targets.map((t) => ({
        templateId: t.templateId,
        template: t.templateName,
        runtime: t.runtime,
        target: t.count,
        idle: idle.filter((e) => sameKey(e, t)).length,
        filling: entries.filter((e) => e.state === 'filling' && sameKey(e, t)).length,
      })),
    };
  }

  #schedule(delayMs = this.#core.options.warmPoolQuietMs): void {
    if (!this.#started || this.#closed) return;
    if (this.#running) {
      this.#asked = Math.min(this.#asked ?? delayMs, delayMs);
      return;
    }
    const dueMs = performance.now() + delayMs;
    if (this.#timer) {
      if (this.#timerDueMs <= dueMs) return;
      clearTimeout(this.#timer);
    }
    this.#timerDueMs = dueMs;
    // A refill is the pool's own work, not the call that asked for it (a create's claim): made outside the
    // caller's context, its spans are traces of their own and its events are caused by the system.
    this.#timer = withCause('system', () => setTimeout(() => {
      this.#timer = null;
      this.#running = this.#tick().then((next) => {
        this.#running = null;
        const asked = this.#asked ?? next;
        this.#asked = null;
        this.#schedule(Math.min(next, asked));
      });
    }, delayMs));
    // Only a caller of filled() keeps the process alive for the pool.
    if (this.#waiters.length === 0) this.#timer.unref();
  }

  /**
   * One step: wait while the foreground is busy, release what is unwanted, fill one sandbox.
   * @returns the delay before the next step, ms.
   */
  async #tick(): Promise<number> {
    const core = this.#core;
    const quietMs = core.options.warmPoolQuietMs;
    if (core.locks.size > 0 || (bringUpsInFlight.get(core) ?? 0) > 0 || core.locks.quietForMs() < quietMs) return quietMs;
    try {
      this.#targets = await poolTargets(core, core.options.warmPool, core.options.warmPoolBudgetMB, this.#recentUse);
      await this.#releaseUnwanted();
      const next = this.#targets.find((t) => this.#countOf(t) < t.count);
      if (!next) {
        for (const resolve of this.#waiters.splice(0)) resolve();
        return RECHECK_MS;
      }
      if (await this.#fill(next)) return quietMs;
    } catch (err) {
      core.logger.warn('warm pool: refill failed', { error: messageOf(err) });
    }
    // A fill failed: callers of filled() are not kept waiting for the retry.
    for (const resolve of this.#waiters.splice(0)) resolve();
    return FILL_BACKOFF_MS;
  }

  #countOf(target: PoolTarget): number {
    return [...this.#entries.values()].filter((e) => e.state !== 'claimed' && sameKey(e, target)).length;
  }

  /** Restore one sandbox for `target`, egress denied. @returns false when it failed (logged). */
  async #fill(target: PoolTarget): Promise<boolean> {
    const core = this.#core;
    const entry: PooledSandbox = { ...keyOf(target), id: newSandboxId(), slot: null, state: 'filling', stale: false };
    this.#entries.set(entry.id, entry);
    const startedMs = performance.now();
    try {
      entry.slot = await core.store.allocateSlot(entry.id, core.hostId);
      prewarmFreeSlots(core);
      await bringUp(core, pooledRecord(entry, target.envs, core), entry.snapshotId, { egress: 'deny-all' });
      // The claim asks whether it still lives; the first ask of an incarnation may start a process (`runsc
      // state`, ~50-80 ms under load): asked here, in the background, the claim's is a read of /proc.
      await core.runtimes.find((r) => r.name === entry.runtime)?.isAlive?.(entry.id);
    } catch (err) {
      core.logger.warn('warm pool: restoring a pooled sandbox failed', { template: target.templateName, runtime: target.runtime, error: messageOf(err) });
      await this.#release(entry);
      return false;
    }
    if (this.#closed || entry.stale) {
      await this.#release(entry);
      return true;
    }
    entry.state = 'idle';
    const stats = this.stats();
    core.logger.info('warm pool: sandbox ready', {
      template: target.templateName, runtime: target.runtime, restoreMs: Math.round(performance.now() - startedMs),
      idle: stats.idle, hits: stats.hits, misses: stats.misses, memoryMB: stats.memoryMB,
    });
    return true;
  }

  /** Release idle sandboxes no target wants (or beyond its count), and mark stale fills. */
  async #releaseUnwanted(): Promise<void> {
    const room = new Map(this.#targets.map((t) => [t, t.count]));
    const unwanted: PooledSandbox[] = [];
    for (const entry of this.#entries.values()) {
      if (entry.state === 'claimed') continue;
      const target = this.#targets.find((t) => sameKey(entry, t));
      const left = target ? (room.get(target) ?? 0) : 0;
      if (target && left > 0) {
        room.set(target, left - 1);
        continue;
      }
      if (entry.state === 'filling') entry.stale = true;
      else unwanted.push(entry);
    }
    if (unwanted.length > 0) this.#core.logger.info('warm pool: releasing sandboxes no longer wanted', { sandboxIds: unwanted.map((e) => e.id) });
    await Promise.all(unwanted.map((e) => this.#release(e)));
  }

  async #release(entry: PooledSandbox): Promise<void> {
    this.#entries.delete(entry.id);
    await releaseResources(this.#core, pooledRecord(entry, {}, this.#core));
  }
}

function keyOf(target: PoolTarget): PoolKey {
  const { templateId, runtime, snapshotId, rootfsDir, cpuCount, memoryMB, diskSizeMB } = target;
  return { templateId, runtime, snapshotId, rootfsDir, cpuCount, memoryMB, diskSizeMB };
}

/** The record bring-up and release work from (never stored: a pooled sandbox has no row). */
function pooledRecord(entry: PooledSandbox, envs: Record<string, string>, core: Pick<Core, 'clock' | 'hostId'>): SandboxRecord {
  const now = core.clock.now();
  return {
    id: entry.id, teamId: '', state: 'creating', runtime: entry.runtime, templateId: entry.templateId, sourceSnapshotId: entry.snapshotId,
    rootfsDir: entry.rootfsDir, parentId: null, cpuCount: entry.cpuCount, memoryMB: entry.memoryMB, diskSizeMB: entry.diskSizeMB,
    metadata: {}, envs, createdAt: now, timeoutMs: 0, onTimeout: 'kill', endAt: null, slot: entry.slot, pausedSnapshotId: null,
    error: null, operation: null, ingress: { ports: [], autoResume: null }, autoPause: null, lastActiveAt: null, hostId: core.hostId,
  };
}
