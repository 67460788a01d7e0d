/**
 * Conformance: forking a running sandbox on a runtime that takes the fork point in place (the microVM:
 * `Runtime.checkpointKeepRunning`). The parent never leaves `running` while the fork runs (it is
 * stopped only while its state is copied), its processes go on, and the children carry them too.
 * Runtimes that checkpoint and restore the parent (gVisor) skip it with that reason.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { SuiteContext } from '../context.js';
import { sh } from '../support.js';

/** Register the `fork point` group. */
export function registerForkPointCases(ctx: SuiteContext): void {
  describe('fork point', () => {
    after(() => ctx.killAll());
    const skip = ctx.target.forkKeepsParentRunning ? false : `the ${ctx.target.runtime} runtime checkpoints and restores the parent of a fork (it is paused meanwhile)`;

    test('forking a running sandbox: the parent stays running throughout, its processes go on, the children carry them', { skip }, async () => {
      const sbx = await ctx.create();
      const handle = await sbx.commands.run('sleep 100000', { background: true });
      const pid = handle.pid;
      await handle.disconnect();
      const seen = new Set<string>();
      let forking = true;
      const watch = (async () => {
        while (forking) {
          seen.add((await sbx.getInfo()).state);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      })();
      const forks = await sbx.fork({ count: 2 }).finally(() => {
        forking = false;
      });
      await watch;
      assert.deepEqual([...seen], ['running'], `states of the parent seen during the fork: ${[...seen].join(', ')}`);
      for (const s of [sbx, ...forks]) await sh(s, `kill -0 ${pid}`);
      assert.equal((await sbx.getInfo()).state, 'running');
    });
  });
}
