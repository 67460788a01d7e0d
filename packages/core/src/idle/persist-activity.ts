/**
 * The activity persister: writes the sandboxes' last-use times ({@link SandboxActivity.takeUnsaved}) to the
 * store in one batch every `activityPersistMs`, and once more when stopped (the daemon's shutdown), so the
 * idle clock of auto-pause survives a restart. Not a write per API call: a busy sandbox costs one row
 * update per interval. A crash loses at most the last interval's touches (the sandbox may then pause up to
 * that much early, and a request wakes it); a start or resume is stored with its state change.
 */
import type { Core } from '../context.js';
import { PeriodicTask } from '../lifecycle/periodic.js';
import { messageOf } from '../lifecycle/records.js';

/** Writes every `activityPersistMs` once started (0: only on {@link PeriodicTask.sweep} and {@link stop}). */
export class ActivityPersister extends PeriodicTask {
  constructor(core: Pick<Core, 'activity' | 'store' | 'logger' | 'clock' | 'options'>) {
    super(core.options.activityPersistMs, () => persistActivity(core));
  }

  /** Stop the timer, then write what is still unsaved. Never rejects. */
  override async stop(): Promise<void> {
    await super.stop();
    await this.sweep();
  }
}

/** One write of the unsaved last-use times; never rejects (a failed write is logged, and its times wait for the next touch). */
async function persistActivity(core: Pick<Core, 'activity' | 'store' | 'logger' | 'clock'>): Promise<void> {
  const entries = core.activity.takeUnsaved(core.clock.now());
  if (entries.length === 0) return;
  await core.store.recordActivity(entries).catch((err: unknown) => core.logger.warn('storing sandbox activity failed', { sandboxes: entries.length, error: messageOf(err) }));
}
