/**
 * Reconcile tests with FAKE runtime, network and agent (core logic only) and a real SQLite store. A
 * "crash" is simulated by making one port call never return (optionally after doing its work), then
 * building a second core over the same store file, storage and runtime, as a restarted daemon would.
 */
import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createCore } from '../core.js';
import type { Logger } from '../ports/logger.js';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { runCommand } from '../sandbox/commands.js';
import { createSandbox } from './create.js';
import { forkSandbox } from './fork.js';
import { getSandbox } from './get.js';
import { killSandbox } from './kill.js';
import { pauseSandbox } from './pause.js';
import { reconcile } from './reconcile.js';
import { resumeSandbox } from './resume.js';

const worlds: TestWorld[] = [];
afterEach(async () => {
  for (const w of worlds.splice(0)) await w.dispose();
});

async function world(options: Parameters<typeof createTestWorld>[0] = {}): Promise<TestWorld> {
  const w = await createTestWorld(options);
  worlds.push(w);
  return w;
}

/** Restart: stop the first core (its in-flight call never finishes) and build a new one over the same state. */
async function restart(first: TestWorld): Promise<TestWorld> {
  worlds.splice(worlds.indexOf(first), 1);
  await first.close();
  const second = await createTestWorld({}, first);
  worlds.push(second);
  return second;
}

const never = (): Promise<never> => new Promise<never>(() => {});

/**
 * Make `target[method]` hang forever (after doing its real work when `when` is `after`), for the calls
 * `only` selects. Resolves once the crash point is reached; the method is then put back for the next core.
 */
function crashAt<T extends object, K extends keyof T>(target: T, method: K, when: 'before' | 'after', only?: (...args: unknown[]) => boolean): Promise<void> {
  const original = (target[method] as (...args: unknown[]) => Promise<unknown>).bind(target);
  return new Promise<void>((reached) => {
    (target as Record<K, unknown>)[method] = async (...args: unknown[]) => {
      if (only && !only(...args)) return original(...args);
      if (when === 'after') await original(...args);
      restoreMethod(target, method);
      reached();
      return never();
    };
  });
}

function restoreMethod<T extends object, K extends keyof T>(target: T, method: K): void {
  delete (target as Record<K, unknown>)[method];
}

describe('reconcile after a restart (fake runtime)', () => {
  test('running sandboxes are re-attached; paused ones stay paused and resumable', async () => {
    const w1 = await world();
    const running = await createSandbox(w1.core, {});
    const paused = await createSandbox(w1.core, {});
    await pauseSandbox(w1.core, paused.id);
    const w2 = await restart(w1);
    const report = await reconcile(w2.core);
    assert.equal(report.sandboxes[running.id], 'reattached');
    assert.equal(report.sandboxes[paused.id], 'unchanged');
    assert.ok(w2.core.sessions.peek(running.id), 'agent channel reopened');
    const r = await runCommand(w2.core, running.id, { cmd: 'echo alive' });
    assert.equal('stdout' in r ? r.stdout : '', 'alive\n');
    assert.equal((await resumeSandbox(w2.core, paused.id)).state, 'running');
  });

  test("a running sandbox's egress policy is in force again before its agent is reached (a gVisor host reaches it through the slot)", async () => {
    const w1 = await world();
    const sbx = await createSandbox(w1.core, { egress: ['pypi.org'] });
    const w2 = await restart(w1);
    // The restarted enforcement holds nothing; record when the agent is reached among its calls.
    w2.egress.inForce.clear();
    w2.egress.calls.length = 0;
    const open = w2.runtime.openAgentChannel.bind(w2.runtime);
    w2.runtime.openAgentChannel = async (id: string) => (w2.egress.calls.push(`agent ${id}`), open(id));
    await reconcile(w2.core);
    const applied = w2.egress.calls.findIndex((c) => c.startsWith('apply') && c.includes(sbx.id));
    const reached = w2.egress.calls.indexOf(`agent ${sbx.id}`);
    assert.ok(applied >= 0 && reached > applied, w2.egress.calls.join('\n'));
  });

  test('a running sandbox whose instance vanished becomes error with a reason and frees its slot', async () => {
    const w1 = await world();
    const sbx = await createSandbox(w1.core, {});
    w1.runtime.instances.delete(sbx.id);
    const w2 = await restart(w1);
    await reconcile(w2.core);
    const after = await getSandbox(w2.core, sbx.id);
    assert.equal(after.state, 'error');
    assert.match(after.error ?? '', /stopped while the daemon was down/);
    assert.deepEqual(await w2.store.listSlots('host-test'), []);
  });

  test('crash after the pause image was committed: rolled forward to paused', async () => {
    const w1 = await world();
    const sbx = await createSandbox(w1.core, {});
    const crashed = crashAt(w1.storage, 'commit', 'after');
    void pauseSandbox(w1.core, sbx.id);
    await crashed;
    const w2 = await restart(w1);
    assert.equal((await getSandbox(w2.core, sbx.id)).state, 'pausing');
    const report = await reconcile(w2.core);
    assert.equal(report.sandboxes[sbx.id], 'rolled-forward');
    const after = await getSandbox(w2.core, sbx.id);
    assert.equal(after.state, 'paused');
    assert.equal(after.operation, null);
    assert.equal((await w2.store.getSnapshot(after.pausedSnapshotId ?? ''))?.status, 'ready');
    assert.equal((await resumeSandbox(w2.core, sbx.id)).state, 'running');
  });

  test('crash before the checkpoint ran: rolled back to running, partial snapshot removed', async () => {
    const w1 = await world();
    const sbx = await createSandbox(w1.core, {});
    const crashed = crashAt(w1.runtime, 'checkpoint', 'before');
    void pauseSandbox(w1.core, sbx.id);
    await crashed;
    const w2 = await restart(w1);
    const report = await reconcile(w2.core);
    assert.equal(report.sandboxes[sbx.id], 'rolled-back');
    assert.equal((await getSandbox(w2.core, sbx.id)).state, 'running');
    assert.deepEqual((await w2.store.listSnapshots()).map((s) => s.id), ['snap_tpl']);
    const r = await runCommand(w2.core, sbx.id, { cmd: 'echo ok' });
    assert.equal('exitCode' in r ? r.exitCode : -1, 0);
  });

  test('crash mid-resume: forward when the instance came up, back to paused when it did not', async () => {
    const w1 = await world();
    const up = await createSandbox(w1.core, {});
    const down = await createSandbox(w1.core, {});
    await pauseSandbox(w1.core, up.id);
    await pauseSandbox(w1.core, down.id);
    let crashed = crashAt(w1.runtime, 'restore', 'after');
    void resumeSandbox(w1.core, up.id);
    await crashed;
    crashed = crashAt(w1.runtime, 'restore', 'before');
    void resumeSandbox(w1.core, down.id);
    await crashed;
    const w2 = await restart(w1);
    const report = await reconcile(w2.core);
    assert.equal(report.sandboxes[up.id], 'rolled-forward');
    assert.equal(report.sandboxes[down.id], 'rolled-back');
    assert.equal((await getSandbox(w2.core, up.id)).state, 'running');
    assert.equal((await getSandbox(w2.core, down.id)).state, 'paused');
    assert.equal((await resumeSandbox(w2.core, down.id)).state, 'running');
  });

  test('crash after a resume answered but before it collected its pause image: reconcile collects it', async () => {
    const w1 = await world();
    const sbx = await createSandbox(w1.core, {});
    const paused = await pauseSandbox(w1.core, sbx.id);
    const crashed = crashAt(w1.storage, 'remove', 'before');
    assert.equal((await resumeSandbox(w1.core, sbx.id)).state, 'running');
    await crashed;
    assert.ok(await w1.store.getSnapshot(paused.pausedSnapshotId!), 'left behind by the crash');
    const w2 = await restart(w1);
    await reconcile(w2.core);
    assert.equal(await w2.store.getSnapshot(paused.pausedSnapshotId!), null);
    assert.ok(!(await w2.storage.list()).includes(paused.pausedSnapshotId!));
    assert.equal((await getSandbox(w2.core, sbx.id)).state, 'running');
  });

  test('crash mid-create before the restore: error, slot and network released', async () => {
    const w1 = await world();
    const crashed = crashAt(w1.runtime, 'restore', 'before');
    void createSandbox(w1.core, {});
    await crashed;
    const w2 = await restart(w1);
    await reconcile(w2.core);
    const [sbx] = (await w2.store.listSandboxes({})).sandboxes;
    assert.equal(sbx.state, 'error');
    assert.match(sbx.error ?? '', /interrupted/);
    assert.deepEqual(await w2.store.listSlots('host-test'), []);
    assert.equal(w2.network.attached.size, 0);
  });

  test('crash mid-fork: every child is killed, the parent is running, the operation cleared', async () => {
    const w1 = await world({ forkConcurrency: 1 });
    const parent = await createSandbox(w1.core, {});
    let restores = 0;
    const crashed = crashAt(w1.runtime, 'restore', 'after', () => ++restores === 3); // parent, child 1, child 2 hangs after restoring
    void forkSandbox(w1.core, parent.id, { count: 3 });
    await crashed;
    const w2 = await restart(w1);
    const op = (await getSandbox(w2.core, parent.id)).operation;
    assert.equal(op?.kind, 'fork');
    await reconcile(w2.core);
    const after = await getSandbox(w2.core, parent.id);
    assert.equal(after.state, 'running');
    assert.equal(after.operation, null);
    for (const childId of op?.kind === 'fork' ? op.childIds : []) {
      const child = await w2.store.getSandbox(childId);
      assert.ok(child === null || child.state === 'killed', `${childId} is ${child?.state}`);
    }
    assert.deepEqual([...w2.runtime.instances.keys()], [parent.id]);
    assert.deepEqual((await w2.store.listSlots('host-test')).map((l) => l.sandboxId), [parent.id]);
  });

  test('crash mid-kill is finished; orphan instances, slots and pending snapshots are removed', async () => {
    const w1 = await world();
    const sbx = await createSandbox(w1.core, {});
    const crashed = crashAt(w1.runtime, 'kill', 'before');
    void killSandbox(w1.core, sbx.id);
    await crashed;
    await w1.runtime.boot({ sandboxId: 'sbx_ghost', rootfsDir: '/', resources: { cpuCount: 1, memoryMB: 1, diskSizeMB: null }, hostname: 'g', network: await w1.network.attach('sbx_ghost', 99) });
    await w1.store.insertSnapshot({ id: 'snap_half', teamId: 'default', name: null, kind: 'pause', status: 'pending', runtime: 'gvisor', templateId: 'tpl_base', sandboxId: null, parentSnapshotId: null, sizeBytes: 0, createdAt: 1, cpuCount: 1, memoryMB: 1, diskSizeMB: null, rootfsDir: w1.rootfsDir, envs: null, egress: null, hostId: 'host-test' });
    const w2 = await restart(w1);
    const report = await reconcile(w2.core);
    assert.equal((await getSandbox(w2.core, sbx.id)).state, 'killed');
    assert.deepEqual(report.orphanInstances, ['sbx_ghost']);
    assert.deepEqual(report.orphanSlots, [99]);
    assert.deepEqual(report.orphanSnapshots, ['snap_half']);
    assert.equal(w2.runtime.instances.size, 0);
    assert.equal(w2.network.attached.size, 0);
  });

  test('a template build a stop interrupted is removed as a leftover build, in one info line, not as orphans', async () => {
    const w1 = await world();
    const buildId = 'tplb_0123456789abcdef';
    const slot = await w1.store.allocateSlot(buildId, 'host-test');
    await w1.runtime.boot({ sandboxId: buildId, rootfsDir: w1.rootfsDir, resources: { cpuCount: 1, memoryMB: 1, diskSizeMB: null }, hostname: 'sandbox', network: await w1.network.attach(buildId, slot) });
    const w2 = await restart(w1);
    const lines: Array<{ level: string; message: string; fields?: Record<string, unknown> }> = [];
    const line = (level: string) => (message: string, fields?: Record<string, unknown>): void => void lines.push({ level, message, ...(fields ? { fields } : {}) });
    const logger: Logger = { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error') };
    const core = createCore({ ...w2.core, logger });
    try {
      const report = await reconcile(core);
      assert.deepEqual([report.orphanInstances, report.orphanSlots, report.leftoverTemplateBuilds], [[], [], [buildId]]);
      assert.equal(w2.runtime.instances.size, 0, 'the build sandbox is stopped');
      assert.equal(w2.network.attached.size, 0, 'its slot is detached');
      assert.deepEqual(await w2.store.listSlots('host-test'), [], 'and its lease released');
      const mentions = lines.filter((l) => JSON.stringify(l).includes(buildId));
      assert.deepEqual(mentions.map((l) => [l.level, l.message]), [['info', 'reconcile: removed what an interrupted template build left (its build sandbox and slot); build the template again']]);
      assert.deepEqual(lines.filter((l) => l.level === 'warn' || l.level === 'error'), []);
    } finally {
      await core.sessions.closeAll();
    }
  });
});
