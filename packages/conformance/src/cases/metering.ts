/**
 * Conformance: what a sandbox uses reaches the meter through the runtime's counters (`Runtime.usage`):
 * a CPU loop shows as CPU-seconds in the sandbox's usage and as CPU % in its live metrics, with its
 * memory in use and, for a runtime with a disk of its own, the disk it takes (null without one). The
 * daemon samples every 5 s (its default); no timing is asserted, the waits are bounds.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { SuiteContext } from '../context.js';
import { sh, waitFor } from '../support.js';

const MIB = 1024 * 1024;

/** Register the `metering` group. */
export function registerMeteringCases(ctx: SuiteContext): void {
  describe('metering', () => {
    after(() => ctx.killAll());

    const title = 'a CPU loop shows in the usage and the live metrics, with memory and disk in use';
    test(title, ctx.caseOptions(title, { extended: true }), async () => {
      const sbx = await ctx.create({ memoryMB: 512 });
      await sh(sbx, 'timeout 2 sh -c "while :; do :; done"; true', { timeoutMs: 120_000 });
      const usage = await waitFor(async () => {
        const u = await sbx.getUsage();
        return u.cpuSeconds >= 1 ? u : false;
      }, { timeoutMs: 120_000, intervalMs: 1_000, what: 'the loop in the sandbox\'s CPU-seconds' });
      assert.ok(usage.runningSeconds > 2 && usage.memoryPeakBytes > 0, JSON.stringify(usage));
      const [sample] = await waitFor(async () => {
        const busy = (await sbx.getMetrics()).filter((m) => m.cpuUsedPct > 0);
        return busy.length > 0 ? busy : false;
      }, { timeoutMs: 120_000, intervalMs: 1_000, what: 'a sample with CPU in use' });
      assert.ok(sample && sample.memUsed > 0 && sample.memTotal === 512 * MIB && sample.cpuCount === 1, JSON.stringify(sample));
      const info = await sbx.getInfo();
      if (ctx.target.rootDisk === null) assert.deepEqual([sample.diskUsed, sample.diskTotal], [null, null], 'no disk of its own');
      else assert.ok((sample.diskUsed ?? 0) > 0 && sample.diskTotal === (info.diskSizeMB ?? 0) * MIB, JSON.stringify(sample));
    });
  });
}
