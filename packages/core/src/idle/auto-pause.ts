/**
 * The idle auto-pause scheduler: every `autoPauseSweepMs` it looks at each running sandbox that has
 * `autoPause` and pauses it once it has been idle for its `idleMs`: no API call or open stream, no ingress
 * request or connection ({@link SandboxActivity}), and CPU use below `autoPauseCpuThreshold` cores over
 * each sweep interval. The CPU figure is the runtime's (`Runtime.cpuTimeUs`: gVisor reads its cgroup's
 * CPU accounting, the microVM runtime its QEMU process's); a sample above the threshold counts as use,
 * so a busy background job keeps its sandbox running. A runtime that cannot say is judged on the rest.
 * It never kills: a pause refused (`CHECKPOINT_BLOCKED`, or any failure) leaves the sandbox running and is
 * tried again after `timeoutRetryMs`, as the timeout scheduler does.
 */
import type { Core } from '../core.js';
import { pauseLocked } from '../lifecycle/pause.js';
import { withCause } from '../observe/call-context.js';
import { PeriodicTask } from '../lifecycle/periodic.js';
import { loadSandbox, messageOf } from '../lifecycle/records.js';
import type { SandboxRecord } from '../ports/store.js';

/** One CPU reading of a sandbox. */
interface CpuSample {
  cpuUs: number;
  at: number;
}

/** Sweeps every `autoPauseSweepMs` once started (0: only when {@link PeriodicTask.sweep} is called). */
export class AutoPauseScheduler extends PeriodicTask {
  constructor(core: Core) {
    const samples = new Map<string, CpuSample>();
    const retryAt = new Map<string, number>();
    super(core.options.autoPauseSweepMs, () => sweepIdle(core, samples, retryAt));
  }
}

/** One pass; never rejects. */
async function sweepIdle(core: Core, samples: Map<string, CpuSample>, retryAt: Map<string, number>): Promise<void> {
  const watched: SandboxRecord[] = [];
  let cursor: string | undefined;
  try {
    do {
      const page = await core.store.listSandboxes({ states: ['running'], limit: 500, cursor });
      watched.push(...page.sandboxes.filter((s) => s.autoPause !== null));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  } catch (err) {
    core.logger.error('auto-pause sweep: listing running sandboxes failed', { error: messageOf(err) });
    return;
  }
  const seen = new Set(watched.map((s) => s.id));
  for (const id of samples.keys()) if (!seen.has(id)) samples.delete(id);
  for (const id of retryAt.keys()) if (!seen.has(id)) retryAt.delete(id);
  for (const record of watched) {
    // The first CPU reading gives no rate yet: judge the sandbox from the next sweep on (after a daemon
    // restart its stored idle time may be long, and a busy job must get its chance to show).
    if (!(await noteCpu(core, record, samples))) continue;
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

/**
 * Read the sandbox's CPU time; use above the threshold since the last reading counts as activity.
 * @returns false when this is the sandbox's first reading (no rate yet); true otherwise, also when the
 *   runtime cannot say (the sandbox is judged on the rest).
 */
async function noteCpu(core: Core, record: SandboxRecord, samples: Map<string, CpuSample>): Promise<boolean> {
  const runtime = core.runtimes.find((r) => r.name === record.runtime);
  const cpuUs = runtime?.cpuTimeUs ? await runtime.cpuTimeUs(record.id).catch(() => null) : null;
  const at = core.clock.now();
  const previous = samples.get(record.id);
  if (cpuUs === null) {
    samples.delete(record.id);
    return true;
  }
  samples.set(record.id, { cpuUs, at });
  if (!previous) return false;
  // A new runtime instance (after a resume) starts counting again: no rate from that pair.
  if (cpuUs < previous.cpuUs || at <= previous.at) return true;
  const cores = (cpuUs - previous.cpuUs) / 1000 / (at - previous.at);
  if (cores > core.options.autoPauseCpuThreshold) core.activity.touch(record.id);
  return true;
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
