/**
 * The timeout scheduler: every `timeoutSweepMs` it asks the store for running sandboxes whose deadline
 * (`endAt`) has passed and applies their `onTimeout`: `pause` (default) or `kill`. A timeout pause that is
 * refused (`CHECKPOINT_BLOCKED`: pause never kills) leaves the sandbox running and is retried after
 * `timeoutRetryMs`.
 */
import type { Core } from '../context.js';
import type { SandboxRecord } from '../ports/store.js';
import { finishKill } from './kill.js';
import { pauseLocked } from './pause.js';
import { withCause } from '../observe/call-context.js';
import { PeriodicTask } from './periodic.js';
import { loadSandbox, messageOf, transition } from './records.js';
import { timedStates, timeoutClockRuns } from './state-machine.js';

/** Sweeps every `timeoutSweepMs` once started; {@link PeriodicTask.sweep} applies what is due now. */
export class TimeoutScheduler extends PeriodicTask {
  constructor(core: Core) {
    const retryAt = new Map<string, number>();
    super(core.options.timeoutSweepMs, () => sweepTimeouts(core, retryAt));
  }
}

/** One pass: the timeout action of every sandbox due now; a refused one is retried after `timeoutRetryMs`. Never rejects. */
async function sweepTimeouts(core: Core, retryAt: Map<string, number>): Promise<void> {
  const now = core.clock.now();
  let cursor: string | undefined;
  const due: string[] = [];
  try {
    do {
      const page = await core.store.listSandboxes({ states: timedStates(), endAtOrBefore: now, hostId: core.hostId, limit: 500, cursor });
      due.push(...page.sandboxes.map((s) => s.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  } catch (err) {
    core.logger.error('timeout sweep: listing due sandboxes failed', { error: messageOf(err) });
    return;
  }
  for (const id of due) {
    if ((retryAt.get(id) ?? 0) > now) continue;
    retryAt.delete(id);
    await expire(core, id).catch((err: unknown) => {
      retryAt.set(id, core.clock.now() + core.options.timeoutRetryMs);
      core.logger.warn('timeout action failed; will retry', { sandboxId: id, error: messageOf(err) });
    });
  }
}

/** Apply the sandbox's timeout action if it is (still) due once its lock is held. */
async function expire(core: Core, sandboxId: string): Promise<void> {
  await withCause('timeout', () => expireLocked(core, sandboxId));
}

async function expireLocked(core: Core, sandboxId: string): Promise<void> {
  await core.locks.run(sandboxId, async () => {
    const record: SandboxRecord = await loadSandbox(core, sandboxId);
    if (!timeoutClockRuns(record.state) || record.endAt === null || record.endAt > core.clock.now()) return;
    core.logger.info('sandbox timed out', { sandboxId, action: record.onTimeout });
    core.events.emitTimedOut({ sandboxId, sandbox: record, action: record.onTimeout, at: core.clock.now() });
    if (record.onTimeout === 'kill') {
      await finishKill(core, await transition(core, record, 'killing', { operation: { kind: 'kill' } }));
    } else {
      await pauseLocked(core, record);
    }
  });
}
