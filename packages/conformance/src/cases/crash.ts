/**
 * Conformance: crash recovery. The daemon is SIGKILLed while a sandbox runs, in the middle of a pause
 * and in the middle of a fork (a race, not a timing assertion: either outcome must be consistent), and
 * restarted on the same data directory. Afterwards every sandbox is running or paused-and-resumable,
 * none is lost, no namespace outlives its sandbox, and a paused sandbox survives restarts and resumes.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { SandboxInfo } from '@ramify/contracts';
import { Sandbox } from '@ramify/sdk';
import type { SuiteContext } from '../context.js';
import { listNamespaces, sandboxNamespaceOf } from '../host-cleanup.js';
import { sh, waitFor } from '../support.js';
import { CHILDREN_RESTORING, RUNTIME_CHECKPOINT, STATE_LEFT_RUNNING, crashAt } from './crash-points.js';
import { appenderCmd, appenderCount } from './lifecycle.js';

const LOG = '/root/appender.log';

/** Start the appender and wait until it has written a few lines; returns its pid. */
async function startAppender(sbx: Sandbox): Promise<number> {
  const handle = await sbx.commands.run(appenderCmd(LOG), { background: true });
  await handle.disconnect();
  await waitFor(async () => (await appenderCount(sbx, LOG)) >= 3, { timeoutMs: 30_000, what: 'the appender to start' });
  return handle.pid;
}

/** The sandbox works: commands run, `marker` holds `text`, the appender `pid` runs and keeps appending from where it was. */
async function assertIntact(sbx: Sandbox, marker: { path: string; text: string }, appenderPid: number): Promise<void> {
  assert.equal((await sh(sbx, 'echo alive')).trim(), 'alive');
  assert.equal(await sbx.files.read(marker.path), marker.text);
  assert.equal((await sbx.commands.list()).find((p) => p.pid === appenderPid)?.running, true, 'the background process still runs');
  const count = await appenderCount(sbx, LOG);
  await waitFor(async () => (await appenderCount(sbx, LOG)) > count, { timeoutMs: 30_000, what: 'the appender to keep appending' });
}

/** Bring a recovered sandbox to `running` (resuming it when paused); asserts it is one of the two. */
async function runningAgain(sbx: Sandbox): Promise<SandboxInfo['state']> {
  const info = await sbx.getInfo();
  assert.ok(info.state === 'running' || info.state === 'paused', `sandbox ${sbx.sandboxId} is ${info.state} after recovery${info.error ? `: ${info.error}` : ''}`);
  if (info.state === 'paused') assert.equal((await sbx.resume()).state, 'running');
  return info.state;
}

/** Slot numbers of the `<prefix>-<kind><slot>` namespaces in `names`, sorted as strings. */
function slotsOf(prefix: string, names: string[], kind: 's' | 'r'): string[] {
  const re = new RegExp(`^${prefix}-${kind}(\\d+)$`);
  return names.map((n) => re.exec(n)?.[1]).filter((x): x is string => x !== undefined).sort();
}

/** Register the `crash recovery` group. */
export function registerCrashCases(ctx: SuiteContext): void {
  describe('crash recovery', () => {
    after(() => ctx.killAll());

    test('kill -9 while a sandbox runs: after restart it is re-attached and its process still runs', async () => {
      const sbx = await ctx.create();
      const marker = { path: '/root/marker.txt', text: 'survives a daemon crash' };
      await sbx.files.write(marker.path, marker.text);
      const pid = await startAppender(sbx);
      await ctx.daemon().crash();
      await ctx.daemon().start();
      assert.equal((await sbx.getInfo()).state, 'running');
      await assertIntact(sbx, marker, pid);
    });

    // Races, not timing assertions: the daemon is killed at an observed moment of the operation, and
    // whatever the kill hits must leave every sandbox running or paused-and-resumable.
    // Extended (full runs only, where the target says so): the crash points a CI run can do without.
    for (const point of [STATE_LEFT_RUNNING, RUNTIME_CHECKPOINT]) {
      const title = `kill -9 in the middle of a pause (${point.name}): the sandbox ends up running or paused-and-resumable`;
      test(title, ctx.caseOptions(title, { extended: point !== RUNTIME_CHECKPOINT }), async (t) => {
        const sbx = await ctx.create();
        const marker = { path: '/root/marker.txt', text: 'survives a crash mid-pause' };
        await sbx.files.write(marker.path, marker.text);
        const pid = await startAppender(sbx);
        const pausing = sbx.pause().then((info) => info.state, (err: unknown) => `failed: ${(err as Error).message}`);
        t.diagnostic(await crashAt(ctx, point, sbx.sandboxId));
        t.diagnostic(`pause call: ${await pausing}`);
        await ctx.daemon().start();
        t.diagnostic(`after restart: ${await runningAgain(sbx)}`);
        await assertIntact(sbx, marker, pid);
      });
    }

    // Every crash point of a fork is extended: a CI run keeps the pause's checkpoint-in-flight crash above
    // (the same checkpoint a fork takes first) and saves the ~26 s of a fork's children restoring.
    for (const point of [STATE_LEFT_RUNNING, RUNTIME_CHECKPOINT, CHILDREN_RESTORING]) {
      const title = `kill -9 in the middle of a fork (${point.name}): parent and children end up running or paused, none lost`;
      test(title, ctx.caseOptions(title, { extended: true }), async (t) => {
        const parent = await ctx.create();
        const marker = { path: '/root/marker.txt', text: 'survives a crash mid-fork' };
        await parent.files.write(marker.path, marker.text);
        const pid = await startAppender(parent);
        const forking = parent.fork({ count: 2 }).then((children) => `${children.length} children`, (err: unknown) => `failed: ${(err as Error).message}`);
        t.diagnostic(await crashAt(ctx, point, parent.sandboxId));
        t.diagnostic(`fork call: ${await forking}`);
        await ctx.daemon().start();

        // This case's sandboxes only (an earlier case's failure must not fail this one).
        const live = (await ctx.daemon().liveSandboxes()).filter((s) => s.id === parent.sandboxId || s.parentId === parent.sandboxId);
        const bad = live.filter((s) => s.state !== 'running' && s.state !== 'paused');
        assert.deepEqual(bad.map((s) => `${s.id}: ${s.state} ${s.error ?? ''}`), [], 'every sandbox is running or paused');
        assert.ok(live.some((s) => s.id === parent.sandboxId), 'the parent is not lost');
        t.diagnostic(`parent after restart: ${await runningAgain(parent)}`);
        await assertIntact(parent, marker, pid);
        const children = live.filter((s) => s.parentId === parent.sandboxId);
        t.diagnostic(`children that survived: ${children.length}`);
        for (const info of children) {
          const child = Sandbox.fromId(info.id, ctx.conn());
          await runningAgain(child);
          assert.equal(await child.files.read(marker.path), marker.text);
        }
      });
    }

    test('a paused sandbox survives a restart and a crash, then resumes', async () => {
      const sbx = await ctx.create();
      const marker = { path: '/root/marker.txt', text: 'paused across restarts' };
      await sbx.files.write(marker.path, marker.text);
      const pid = await startAppender(sbx);
      assert.equal((await sbx.pause()).state, 'paused');
      await ctx.daemon().restart();
      assert.equal((await sbx.getInfo()).state, 'paused', 'still paused after a graceful restart');
      await ctx.daemon().crash();
      await ctx.daemon().start();
      assert.equal((await sbx.getInfo()).state, 'paused', 'still paused after a crash');
      assert.equal((await sbx.resume()).state, 'running');
      await assertIntact(sbx, marker, pid);
    });

    test('no namespace outlives its sandbox after the crashes', async () => {
      const daemon = ctx.daemon();
      const prefix = daemon.prefix;
      // Sandboxes in `error` hold no slot (their resources are released); the cases above report them.
      const live = (await daemon.liveSandboxes()).filter((s) => s.state === 'running' || s.state === 'paused');
      const names = await listNamespaces(prefix);
      assert.deepEqual(slotsOf(prefix, names, 'r'), slotsOf(prefix, names, 's'), 'sandbox and router namespaces come in pairs');
      for (const info of live.filter((s) => s.state === 'running')) {
        assert.ok(names.includes(await sandboxNamespaceOf(daemon.dataDir, info.id, ctx.target.runtime)), `the namespace of ${info.id} exists`);
      }
      const extra = slotsOf(prefix, names, 's').length - live.length;
      assert.ok(extra <= daemon.warmSlots, `${extra} namespaces beyond the ${live.length} live sandboxes (at most ${daemon.warmSlots} warm slots): ${names.join(' ')}`);
    });

    test('once every sandbox is killed only the warm slot pool stays', async () => {
      const daemon = ctx.daemon();
      await ctx.killAll();
      assert.deepEqual(await daemon.liveSandboxes(), []);
      // The pool shrinks in the background after each release: give it a bounded while to converge.
      let left: string[] = [];
      for (let i = 0; i < 100; i++) {
        left = slotsOf(daemon.prefix, await listNamespaces(daemon.prefix), 's');
        if (left.length <= daemon.warmSlots) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(left.length <= daemon.warmSlots, `${left.length} sandbox namespaces stay (slots ${left.join(' ')}), the pool is ${daemon.warmSlots}`);
    });

    test('a restart trims the namespaces to the warm slot pool', async () => {
      const daemon = ctx.daemon();
      await ctx.killAll();
      await daemon.restart();
      const settled = await waitFor(async () => {
        const slots = slotsOf(daemon.prefix, await listNamespaces(daemon.prefix), 's');
        return slots.length === daemon.warmSlots ? slots : undefined;
      }, { timeoutMs: 60_000, what: `exactly ${daemon.warmSlots} warm sandbox namespaces` });
      assert.deepEqual(settled, Array.from({ length: daemon.warmSlots }, (_, i) => String(i + 1)).sort());
    });
  });
}
