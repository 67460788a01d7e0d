/**
 * The usage sampler: every `usageSampleMs` (default 5000; 0: off) it reads the counters of every running
 * sandbox through the meter (one store write for all of them; live metrics and auto-pause's CPU judgement
 * come from the same reading), then checks the budgets covering them. One pass at a time.
 */
import type { Core } from '../context.js';
import { PeriodicTask } from '../lifecycle/periodic.js';
import { messageOf } from '../lifecycle/records.js';
import { enforceBudgets } from './budget-guard.js';

/** Samples every `usageSampleMs` once started; {@link PeriodicTask.sweep} samples now. */
export class UsageSampler extends PeriodicTask {
  constructor(core: Core) {
    super(core.options.usageSampleMs, async () => {
      const sampled = await core.meter.sampleRunning().catch((err: unknown) => {
        core.logger.error('usage sample failed', { error: messageOf(err) });
        return [];
      });
      core.meter.metrics.prune(core.clock.now());
      await enforceBudgets(core, sampled);
    });
  }
}
