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
import { listNamespaces } from '../host-cleanup.js';
import { sh, waitFor } from '../support.js';
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

/** Poll the sandbox's state through the raw API until `accept` says so (bounded); never throws. */
async function waitForState(ctx: SuiteContext, id: string, accept: (state: string) => boolean): Promise<string | undefined> {
  return waitFor(async () => {
    const res = await ctx.daemon().call('GET', `/v1/sandboxes/${id}`);
    const state = (res.body as SandboxInfo | null)?.state;
    return state !== undefined && accept(state) ? state : undefined;
  }, { timeoutMs: 30_000, intervalMs: 10, what: `sandbox ${id} to leave running` }).catch(() => undefined);
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

    test('kill -9 in the middle of a pause: the sandbox ends up running or paused-and-resumable', async (t) => {
      const sbx = await ctx.create();
      const marker = { path: '/root/marker.txt', text: 'survives a crash mid-pause' };
      await sbx.files.write(marker.path, marker.text);
      const pid = await startAppender(sbx);
      const pausing = sbx.pause().then((info) => info.state, (err: unknown) => `failed: ${(err as Error).message}`);
      const seen = await waitForState(ctx, sbx.sandboxId, (s) => s !== 'running');
      await ctx.daemon().crash();
      t.diagnostic(`state seen before the crash: ${seen ?? 'running'}; pause call: ${await pausing}`);
      await ctx.daemon().start();
      t.diagnostic(`after restart: ${await runningAgain(sbx)}`);
      await assertIntact(sbx, marker, pid);
    });

    test('kill -9 in the middle of a fork: parent and children end up running or paused, none lost', async (t) => {
      const parent = await ctx.create();
      const marker = { path: '/root/marker.txt', text: 'survives a crash mid-fork' };
      await parent.files.write(marker.path, marker.text);
      const pid = await startAppender(parent);
      const forking = parent.fork({ count: 2 }).then((children) => `${children.length} children`, (err: unknown) => `failed: ${(err as Error).message}`);
      const seen = await waitForState(ctx, parent.sandboxId, (s) => s !== 'running');
      await ctx.daemon().crash();
      t.diagnostic(`parent state seen before the crash: ${seen ?? 'running'}; fork call: ${await forking}`);
      await ctx.daemon().start();

      const live = await ctx.daemon().liveSandboxes();
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

    test('no namespace outlives its sandbox after the crashes', async () => {
      const holding = (await ctx.daemon().liveSandboxes()).filter((s) => s.state === 'running' || s.state === 'paused');
      const names = await listNamespaces(ctx.daemon().prefix);
      const prefix = ctx.daemon().prefix;
      const sandboxNs = names.filter((n) => n.startsWith(`${prefix}-s`));
      const routerNs = names.filter((n) => n.startsWith(`${prefix}-r`));
      assert.equal(sandboxNs.length, holding.length, `sandbox namespaces ${JSON.stringify(sandboxNs)} vs ${holding.length} live sandboxes`);
      assert.equal(routerNs.length, holding.length, `router namespaces ${JSON.stringify(routerNs)} vs ${holding.length} live sandboxes`);
    });

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
  });
}
