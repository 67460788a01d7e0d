/**
 * Conformance: the sandbox runs on its runtime's kernel, never the host's. `uname -r` and `/proc/version`
 * read inside a sandbox differ from the host's (`os.release()`, `/proc/version`), and, where the target
 * names its guest kernel (the microVM runtime boots Debian's generic kernel), they are that kernel's.
 * Forks and restores keep it: a fork answers with the same guest kernel.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { release } from 'node:os';
import { after, describe, test } from 'node:test';
import type { SuiteContext } from '../context.js';
import { sh } from '../support.js';

/** Register the `guest kernel` group. */
export function registerGuestKernelCases(ctx: SuiteContext): void {
  describe('guest kernel', () => {
    after(() => ctx.killAll());

    test('uname -r and /proc/version are the guest kernel\'s, not the host\'s, in a sandbox and in its fork', async (t) => {
      const hostRelease = release();
      const hostVersion = (await readFile('/proc/version', 'utf8')).trim();
      const sbx = await ctx.create();
      const [fork] = await sbx.fork({ count: 1 });
      assert.ok(fork, 'one fork');
      for (const [role, s] of [['sandbox', sbx], ['fork', fork]] as const) {
        const guestRelease = (await sh(s, 'uname -r')).trim();
        const guestVersion = (await sh(s, 'cat /proc/version')).trim();
        t.diagnostic(`${role}: uname -r = ${guestRelease}; /proc/version = ${guestVersion} (host: ${hostRelease})`);
        assert.notEqual(guestRelease, hostRelease, `${role}: uname -r is not the host's release`);
        assert.notEqual(guestVersion, hostVersion, `${role}: /proc/version is not the host's`);
        const expected = ctx.target.guestKernel;
        if (expected) {
          assert.match(guestRelease, expected.release, `${role}: uname -r is the guest kernel's`);
          assert.match(guestVersion, expected.procVersion, `${role}: /proc/version is the guest kernel's`);
          assert.ok(guestVersion.includes(guestRelease), `${role}: /proc/version names the release uname -r reports`);
        }
      }
    });
  });
}
