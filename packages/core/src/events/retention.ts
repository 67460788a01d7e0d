/**
 * Retention: events (with their webhook deliveries) and the command log are kept `eventRetentionMs`
 * (default 7 days, as E2B keeps lifecycle events); the pruner deletes older ones every
 * `eventPruneIntervalMs` (default an hour, and once at start). Never rejects: a failed prune is logged and
 * the next one tries again.
 */
import type { Core } from '../context.js';
import { PeriodicTask } from '../lifecycle/periodic.js';
import { messageOf } from '../lifecycle/records.js';

export class EventPruner extends PeriodicTask {
  constructor(core: Pick<Core, 'store' | 'logger' | 'clock' | 'options'>) {
    super(core.options.eventPruneIntervalMs, async () => void (await pruneEvents(core)));
  }

  /** Prune now, then every interval. */
  override start(): void {
    void this.sweep();
    super.start();
  }
}

/** Delete what is older than the retention; resolves with how many events and commands went. Never rejects. */
export async function pruneEvents(core: Pick<Core, 'store' | 'logger' | 'clock' | 'options'>): Promise<{ events: number; commands: number }> {
  const before = core.clock.now() - core.options.eventRetentionMs;
  try {
    const events = await core.store.pruneEvents(before);
    const commands = await core.store.pruneCommandLog(before);
    if (events + commands > 0) core.logger.debug('pruned events past their retention', { events, commands, retentionMs: core.options.eventRetentionMs });
    return { events, commands };
  } catch (err) {
    core.logger.warn('pruning events failed', { error: messageOf(err) });
    return { events: 0, commands: 0 };
  }
}
