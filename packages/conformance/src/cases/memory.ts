/**
 * Conformance: memory pressure hits the process, not the machine. A process that allocates without
 * bound is killed (its result says `oom`, the SDK throws `COMMAND_OOM`) while the agent keeps answering
 * and the sandbox stays `running`; the kill is recorded (audit action `sandbox.oom`). Filling /tmp
 * ends with `ENOSPC` (a disk, a sized tmpfs) or with the writer killed as OOM (gVisor, whose files live
 * in memory), and the sandbox stays usable. Hogs are bounded by the sandbox's own limit (gVisor: the
 * host cgroup, memoryMB plus the guard's headroom; microVM: the VM's RAM), never by the host's memory.
 * No timing is asserted: that the agent answers is, not how fast.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { CommandExitError, isRamifyError, type Sandbox } from '@ramify/sdk';
import type { SuiteContext } from '../context.js';
import { sh, sleep, waitFor } from '../support.js';

/** Memory of the sandboxes here, MiB (small: the hogs fill it). */
const MEMORY_MB = 512;

/** Allocates 16 MiB at a time, touching every page, until something stops it. */
const HOG = `python3 -c "a=[]\nwhile True: a.append(bytearray(16<<20))"`;

/** Bound on a hog or a fill running to its end, ms (TCG microVMs are slow; never a timing assertion). */
const END_BOUND_MS = 10 * 60_000;

/**
 * Run `cmd` to its end while running `echo ok` over and over beside it; resolves with the command's
 * result or the error it threw, and how many `echo ok` answered (each must say `ok`).
 */
async function runBesideEcho(sbx: Sandbox, cmd: string): Promise<{ outcome: unknown; echoes: number }> {
  const handle = await sbx.commands.run(cmd, { background: true, timeoutMs: END_BOUND_MS });
  let done = false;
  const outcome = handle.wait().then(
    (r) => r,
    (err: unknown) => err,
  ).finally(() => {
    done = true;
  });
  let echoes = 0;
  while (!done) {
    assert.equal((await sh(sbx, 'echo ok')).trim(), 'ok', 'the sandbox answers a command while the other one eats its memory');
    echoes++;
    await sleep(100);
  }
  return { outcome: await outcome, echoes };
}

/** The audit entries of `sandboxId` with action `sandbox.oom`. */
async function oomEntries(ctx: SuiteContext, sandboxId: string): Promise<Array<{ action: string; path: string; errorCode: string | null }>> {
  const res = await ctx.daemon().call('GET', `/v1/audit?sandboxId=${encodeURIComponent(sandboxId)}&limit=1000`);
  assert.equal(res.status, 200, res.text);
  return (res.body as { entries: Array<{ action: string; path: string; errorCode: string | null }> }).entries.filter((e) => e.action === 'sandbox.oom');
}

/** Register the `memory pressure` group. */
export function registerMemoryCases(ctx: SuiteContext): void {
  describe('memory pressure', () => {
    after(() => ctx.killAll());

    test('a memory hog is killed as out of memory; the agent keeps answering; the sandbox stays running; the kill is recorded', async (t) => {
      const sbx = await ctx.create({ memoryMB: MEMORY_MB });
      const { outcome, echoes } = await runBesideEcho(sbx, HOG);
      t.diagnostic(`echo ok answered ${echoes} times while the hog ran`);
      assert.ok(outcome instanceof CommandExitError, `the hog fails: ${String(outcome)}`);
      assert.equal(outcome.code, 'COMMAND_OOM', outcome.message);
      assert.equal(outcome.error, 'oom');
      assert.equal(outcome.signal, 'SIGKILL', 'the hog itself was the victim');
      assert.match(outcome.message, /ran out of memory/);

      assert.equal((await sbx.getInfo()).state, 'running');
      assert.equal((await sh(sbx, 'echo ok')).trim(), 'ok');
      const listed = (await sbx.commands.list()).find((p) => p.pid === outcome.result.pid);
      assert.equal(listed?.error, 'oom', 'the process list says why it ended');
      const entries = await waitFor(async () => {
        const found = await oomEntries(ctx, sbx.sandboxId);
        return found.length > 0 ? found : undefined;
      }, { timeoutMs: 60_000, what: 'the sandbox.oom audit entry' });
      assert.equal(entries[0]?.errorCode, 'COMMAND_OOM');
      assert.match(entries[0]?.path ?? '', new RegExp(`/v1/sandboxes/${sbx.sandboxId}/processes/\\d+$`));
    });

    const fill = 'filling /tmp or /dev/shm ends with ENOSPC or the writer killed as out of memory; the sandbox stays running and usable';
    test(fill, ctx.caseOptions(fill, { extended: true }), async (t) => {
      const sbx = await ctx.create({ memoryMB: MEMORY_MB });
      for (const path of ['/tmp/fill', '/dev/shm/fill']) {
        const { outcome, echoes } = await runBesideEcho(sbx, `dd if=/dev/zero of=${path} bs=1M`);
        t.diagnostic(`${path}: echo ok answered ${echoes} times while dd ran`);
        assert.ok(outcome instanceof CommandExitError, `dd cannot fill ${path} for ever: ${String(outcome)}`);
        const noSpace = /No space left on device/.test(outcome.stderr);
        t.diagnostic(`${path}: ${noSpace ? 'ENOSPC' : outcome.message}`);
        assert.ok(noSpace || outcome.error === 'oom', `ENOSPC or an OOM kill, got: ${outcome.message}\n${outcome.stderr}`);

        assert.equal((await sbx.getInfo()).state, 'running');
        assert.equal((await sh(sbx, `rm -f ${path} && echo ok`)).trim(), 'ok', 'the file can be removed');
        assert.equal((await sh(sbx, 'echo ok')).trim(), 'ok');
      }
    });

    test('an upload that does not fit fails and leaves the sandbox usable', ctx.caseOptions('an upload that does not fit fails and leaves the sandbox usable', { extended: true }), async () => {
      const sbx = await ctx.create({ memoryMB: MEMORY_MB });
      // More than the sandbox's root disk (microVM) or its memory (gVisor keeps files there).
      const disk = ctx.target.rootDisk;
      const size = (disk ? disk.defaultSizeMB + 64 : 2 * MEMORY_MB) * 1024 * 1024;
      let caught: unknown;
      try {
        await sbx.files.write('/root/huge.bin', zeros(size));
      } catch (err) {
        caught = err;
      }
      assert.ok(isRamifyError(caught), `the upload fails with a Ramify error, got ${String(caught)}`);
      assert.equal(caught.code, 'NO_SPACE', caught.message);
      assert.equal((await sbx.getInfo()).state, 'running');
      assert.equal((await sh(sbx, 'test ! -e /root/huge.bin && echo ok')).trim(), 'ok', 'nothing of the upload is left');
    });
  });
}

/** `total` zero bytes, 1 MiB at a time. */
async function* zeros(total: number): AsyncIterable<Uint8Array> {
  const chunk = new Uint8Array(1 << 20);
  for (let left = total; left > 0; left -= chunk.byteLength) yield left >= chunk.byteLength ? chunk : chunk.subarray(0, left);
}
