/**
 * The liveness monitor: every `livenessPollMs` it asks each running sandbox's runtime whether its
 * instance still lives (`Runtime.isAlive`, a cheap check of the runtime's own processes: no channel
 * round trip) and hands every dead one to {@link handleInstanceLost}, which records `error` with the
 * reason. So a runtime process killed from outside (or crashed) is noticed within about a poll,
 * instead of when a call's agent channel times out (20 s), and later calls fail at once.
 */
import type { Core } from '../context.js';
import { handleInstanceLost } from './instance-lost.js';
import { PeriodicTask } from './periodic.js';
import { messageOf } from './records.js';

/** Checks every `livenessPollMs` once started (0: only when {@link PeriodicTask.sweep} is called). */
export class LivenessMonitor extends PeriodicTask {
  constructor(core: Core) {
    super(core.options.livenessPollMs, () => sweepLiveness(core));
  }
}

/** One pass over every running sandbox; never rejects. */
async function sweepLiveness(core: Core): Promise<void> {
  let cursor: string | undefined;
  try {
    do {
      const page = await core.store.listSandboxes({ states: ['running'], hostId: core.hostId, limit: 500, cursor });
      await Promise.all(page.sandboxes.map(async (record) => {
        const runtime = core.runtimes.find((r) => r.name === record.runtime);
        if (!runtime?.isAlive || (await runtime.isAlive(record.id).catch(() => true))) return;
        await handleInstanceLost(core, record.id, 'liveness');
      }));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  } catch (err) {
    core.logger.error('liveness check failed', { error: messageOf(err) });
  }
}
