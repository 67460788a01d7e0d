/**
 * The shape of what core reports to telemetry (what becomes a trace): an operation's phases nest where
 * the work nests. With the FAKE runtime and a recording telemetry (core logic only; the real exporter and
 * a real collector are covered by real-events.test.ts).
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorld } from '../testing/world.js';
import { createRecordedWorld, type RecordedOperation, type RecordingTelemetry } from '../testing/recording-telemetry.js';
import { createSandbox } from '../lifecycle/create.js';
import { forkSandbox } from '../lifecycle/fork.js';
import { pauseSandbox } from '../lifecycle/pause.js';
import { resumeSandbox } from '../lifecycle/resume.js';
import { currentCallContext, withCallContext } from './call-context.js';
import { runPhase } from './operation.js';
import { parseWarmPoolSpec } from '@ramify/contracts';

let w: TestWorld;
let telemetry: RecordingTelemetry;
beforeEach(async () => ({ world: w, telemetry } = await createRecordedWorld()));
afterEach(() => w.dispose());

/** `name` → its leaf phases and nested phases, recursively (ended ones only must be all of them). */
interface Tree {
  phases: string[];
  children: Record<string, Tree>;
}
function treeOf(op: RecordedOperation): Tree {
  const children: Record<string, Tree> = {};
  for (const child of telemetry.childrenOf(op)) {
    assert.equal(child.isPhase, true, `${child.name} under ${op.name} is a phase`);
    assert.equal(child.errorCode, null, `${child.name} ended ok`);
    children[child.name] = treeOf(child);
  }
  return { phases: op.phases, children };
}

const BRING_UP = { phases: ['network', 'egress', 'image', 'restore', 'agent', 'identity'], children: {} };

describe('telemetry phases nest where the work nests', () => {
  test('create → resolve, networks, start → (store, bringUp → network, egress, image, restore, agent, identity, running)', async () => {
    const sbx = await createSandbox(w.core, {});
    const [create] = telemetry.named('create');
    assert.equal(create?.attributes['ramify.sandbox_id'], sbx.id);
    assert.deepEqual(treeOf(create as RecordedOperation), {
      phases: ['resolve', 'networks'],
      children: { start: { phases: ['store', 'running'], children: { bringUp: BRING_UP } } },
    });
  });

  test("resume → bringUp holds the restore's phases; a fork's children each start in a phase of their own", async () => {
    const sbx = await createSandbox(w.core, {});
    await pauseSandbox(w.core, sbx.id);
    await resumeSandbox(w.core, sbx.id);
    assert.deepEqual(treeOf(telemetry.named('resume')[0] as RecordedOperation), { phases: ['resuming', 'running'], children: { bringUp: BRING_UP } });

    const children = await forkSandbox(w.core, sbx.id, { count: 2 });
    const fork = telemetry.named('fork')[0] as RecordedOperation;
    const starts = telemetry.childrenOf(fork).filter((c) => c.name === 'start');
    assert.deepEqual(starts.map((s) => s.attributes['ramify.sandbox_id']).sort(), children.map((c) => c.id).sort());
    for (const start of starts) assert.deepEqual(treeOf(start), { phases: ['store', 'running'], children: { bringUp: BRING_UP } });
    assert.deepEqual(telemetry.childrenOf(fork).map((c) => c.name).filter((n) => n !== 'start').sort(), ['forkPoint', 'restoreParent']);
  });

  test("a create's claim from the warm pool: the pool's refill is not part of the create's trace", async () => {
    const pooled = await createRecordedWorld({ warmPool: parseWarmPoolSpec('base=1'), warmPoolQuietMs: 0 });
    try {
      await pooled.world.core.pool.start();
      await pooled.world.core.pool.filled();
      // The context each restore runs in: the refill's must be the system's, not the claiming create's.
      const contexts: Array<{ sandboxId: string; operation: boolean; cause: string }> = [];
      const runtime = pooled.world.runtime;
      const restore = runtime.restore.bind(runtime);
      runtime.restore = async (spec, imageDir) => {
        const ctx = currentCallContext();
        contexts.push({ sandboxId: spec.sandboxId, operation: ctx.operation !== null, cause: ctx.cause });
        return restore(spec, imageDir);
      };
      const sbx = await createSandbox(pooled.world.core, {});
      assert.equal(pooled.world.core.pool.stats().hits, 1);
      await pooled.world.core.pool.filled();
      assert.equal(pooled.world.core.pool.stats().idle, 1, 'refilled');
      const refill = contexts.filter((c) => c.sandboxId !== sbx.id);
      assert.deepEqual(refill.map((c) => [c.operation, c.cause]), [[false, 'system']], 'the refill runs outside the create: no operation (so no span under it), caused by the system');
    } finally {
      await pooled.world.core.pool.close();
      await pooled.world.dispose();
    }
  });

  test('runPhase: the error code of a failed phase; outside an operation it just runs', async () => {
    const op = telemetry.begin('op', {}, null);
    await assert.rejects(withCallContext({ operation: op }, () => runPhase('step', async () => { throw Object.assign(new Error('no'), { code: 'X' }); })));
    assert.equal(telemetry.named('step')[0]?.errorCode, 'INTERNAL');
    assert.equal(await runPhase('alone', async () => 7), 7);
    assert.equal(telemetry.named('alone').length, 0);
  });
});
