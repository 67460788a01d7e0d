/**
 * The idle auto-pause scheduler: every `autoPauseSweepMs` it looks at each running sandbox that has
 * `autoPause` and pauses it once it has been idle for its `idleMs`: no API call or open stream, no ingress
 * request or connection ({@link SandboxActivity}), and CPU use below `autoPauseCpuThreshold` cores over
 * each usage sample interval. The CPU figure is the usage sampler's (`usage/meter.ts`, from the runtime's
 * counters: gVisor's cgroup CPU accounting, the QEMU process's): a sample above the threshold touches the
 * sandbox (counts as use), so a busy background job keeps its sandbox running. A sandbox is judged once
 * the sampler has its CPU rate (a runtime that cannot say, or metering off: on the rest alone).
 * It never kills: a pause refused (`CHECKPOINT_BLOCKED`, or any failure) leaves the sandbox running and is
 * tried again after `timeoutRetryMs`, as the timeout scheduler does.
 */
import type { Core } from '../context.js';
import { pauseLocked } from '../lifecycle/pause.js';
import { withCause } from '../observe/call-context.js';
import { PeriodicTask } from '../lifecycle/periodic.js';
import { loadSandbox, messageOf } from '../lifecycle/records.js';
import type { SandboxRecord } from '../ports/store.js';

/** Sweeps every `autoPauseSweepMs` once started (0: only when {@link PeriodicTask.sweep} is called). */
export class AutoPauseScheduler extends PeriodicTask {
  constructor(core: Core) {
    const retryAt = new Map<string, number>();
    super(core.options.autoPauseSweepMs, () => sweepIdle(core, retryAt));
  }
}

/** One pass; never rejects. */
async function sweepIdle(core: Core, retryAt: Map<string, number>): Promise<void> {
  const watched: SandboxRecord[] = [];
  let cursor: string | undefined;
  try {
    do {
      const page = await core.store.listSandboxes({ states: ['running'], hostId: core.hostId, limit: 500, cursor });
      watched.push(...page.sandboxes.filter((s) => s.autoPause !== null));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  } catch (err) {
    core.logger.error('auto-pause sweep: listing running sandboxes failed', { error: messageOf(err) });
    return;
  }
  const seen = new Set(watched.map((s) => s.id));
  for (const id of retryAt.keys()) if (!seen.has(id)) retryAt.delete(id);
  for (const record of watched) {
    // Until the sampler has a CPU rate, do not judge (after a daemon restart its stored idle time may be
    // long, and a busy job must get its chance to show).
    if (!core.meter.cpuJudged(record.id)) continue;
    const now = core.clock.now();
    if (core.activity.idleMs(record.id, now, record.lastActiveAt) < (record.autoPause?.idleMs ?? Infinity)) continue;
    if ((retryAt.get(record.id) ?? 0) > now) continue;
    retryAt.delete(record.id);
    await pauseIfIdle(core, record.id).catch((err: unknown) => {
      retryAt.set(record.id, core.clock.now() + core.options.timeoutRetryMs);
      core.logger.warn('idle auto-pause failed; will retry', { sandboxId: record.id, error: messageOf(err) });
    });
  }
}

/** Pause the sandbox if, under its lock, it is still running, still has autoPause and is still idle. */
async function pauseIfIdle(core: Core, sandboxId: string): Promise<void> {
  await core.locks.run(sandboxId, async () => {
    const record = await loadSandbox(core, sandboxId);
    if (record.state !== 'running' || record.autoPause === null) return;
    const idleMs = core.activity.idleMs(sandboxId, core.clock.now(), record.lastActiveAt);
    if (idleMs < record.autoPause.idleMs) return;
    core.logger.info('sandbox idle: pausing it (autoPause)', { sandboxId, idleMs });
    await withCause('idle', () => pauseLocked(core, record));
  });
}
