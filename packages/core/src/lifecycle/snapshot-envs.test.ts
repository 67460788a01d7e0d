/**
 * A snapshot keeps its sandbox's envs: every snapshot row core writes (named snapshot, pause image, fork
 * point) records the sandbox's envs, and a sandbox created from the snapshot starts with them, the create
 * request's over them. Rows that recorded none (template images, rows from before schema migration 8)
 * fall back to the envs of the snapshot's template. Envs stay out of the API shape (`SnapshotInfo`).
 * FAKE runtime, network and agent (core logic only) and a real SQLite store.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createCore } from '../core.js';
import { silentLogger } from '../ports/logger.js';
import { FakeKeepRunningRuntime } from '../testing/fake-ports.js';
import { createTestWorld, lastGuestEnvs, setTemplateEnvs, type TestWorld } from '../testing/world.js';
import { createSandbox } from './create.js';
import { forkSandbox } from './fork.js';
import { pauseSandbox } from './pause.js';
import { toSnapshotInfo } from './records.js';
import { snapshotSandbox } from './snapshot.js';

let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld();
});
afterEach(async () => {
  await w.dispose();
});


/** A sandbox whose envs differ from its template's (template + request), and its template changed afterwards. */
async function sourceSandbox(): Promise<{ id: string; envs: Record<string, string> }> {
  await setTemplateEnvs(w, { DATA_DIR: '/srv/data', MODE: 'tpl' });
  const source = await createSandbox(w.core, { envs: { MODE: 'source', TOKEN: 's3cret' } });
  assert.deepEqual(source.envs, { DATA_DIR: '/srv/data', MODE: 'source', TOKEN: 's3cret' });
  // A later rebuild of the template must not change what the snapshot brings back.
  await setTemplateEnvs(w, { DATA_DIR: '/elsewhere', NEW: 'template' });
  return source;
}

describe('snapshot envs (fake runtime)', () => {
  test('a named snapshot of a running sandbox brings back its envs, not the template current ones', async () => {
    const source = await sourceSandbox();
    const snap = await snapshotSandbox(w.core, source.id, { name: 'golden' });
    assert.deepEqual((await w.store.getSnapshot(snap.id))?.envs, source.envs);
    const sbx = await createSandbox(w.core, { snapshot: 'golden' });
    assert.deepEqual(sbx.envs, source.envs);
    assert.deepEqual(lastGuestEnvs(w, sbx.id), source.envs);
    // By id too.
    assert.deepEqual((await createSandbox(w.core, { snapshot: snap.id })).envs, source.envs);
  });

  test('the create request envs override the snapshot ones per key; the snapshot row is not modified', async () => {
    const source = await sourceSandbox();
    await snapshotSandbox(w.core, source.id, { name: 'golden' });
    const sbx = await createSandbox(w.core, { snapshot: 'golden', envs: { MODE: 'mine', TOKEN: '', EXTRA: '1' } });
    assert.deepEqual(sbx.envs, { DATA_DIR: '/srv/data', MODE: 'mine', TOKEN: '', EXTRA: '1' });
    assert.deepEqual(lastGuestEnvs(w, sbx.id), { DATA_DIR: '/srv/data', MODE: 'mine', TOKEN: '', EXTRA: '1' });
    assert.deepEqual((await w.store.findSnapshotByName('golden', 'default'))?.envs, source.envs);
  });

  test('the recorded envs outlive the template', async () => {
    const source = await sourceSandbox();
    const snap = await snapshotSandbox(w.core, source.id, { name: 'orphan' });
    await w.store.deleteTemplate(snap.templateId);
    const sbx = await createSandbox(w.core, { snapshot: 'orphan', envs: { A: '1' } });
    assert.deepEqual(sbx.envs, { ...source.envs, A: '1' });
  });

  test('pause images and fork points record the envs; a named pause image brings them back', async () => {
    const source = await sourceSandbox();
    const children = await forkSandbox(w.core, source.id, { count: 1 });
    const forkPoint = await w.store.getSnapshot(children[0]?.sourceSnapshotId ?? '');
    assert.equal(forkPoint?.kind, 'fork');
    assert.deepEqual(forkPoint?.envs, source.envs);

    const paused = await pauseSandbox(w.core, source.id);
    const pauseImage = await w.store.getSnapshot(paused.pausedSnapshotId ?? '');
    assert.equal(pauseImage?.kind, 'pause');
    assert.deepEqual(pauseImage?.envs, source.envs);
    await snapshotSandbox(w.core, source.id, { name: 'from-pause' });
    assert.deepEqual((await createSandbox(w.core, { snapshot: 'from-pause' })).envs, source.envs);
  });

  test('an in-place fork point (checkpointKeepRunning) records the envs', async () => {
    const runtime = new FakeKeepRunningRuntime({ checkpointNeedsQuietNetwork: false });
    const core = createCore({ ...w.core, runtimes: [runtime], connectAgent: runtime.connectAgent, logger: silentLogger });
    try {
      await setTemplateEnvs(w, { MODE: 'tpl' });
      const parent = await createSandbox(core, { envs: { MODE: 'vm' } });
      const [child] = await forkSandbox(core, parent.id, { count: 1 });
      assert.deepEqual((await w.store.getSnapshot(child?.sourceSnapshotId ?? ''))?.envs, { MODE: 'vm' });
    } finally {
      await core.sessions.closeAll();
    }
  });

  test('a row without recorded envs (before migration 8) falls back to the template envs, request over them', async () => {
    const source = await sourceSandbox();
    const snap = await snapshotSandbox(w.core, source.id, { name: 'old' });
    await w.store.updateSnapshot(snap.id, { envs: null });
    assert.equal((await w.store.getSnapshot(snap.id))?.envs, null);
    const sbx = await createSandbox(w.core, { snapshot: 'old', envs: { A: '1' } });
    assert.deepEqual(sbx.envs, { DATA_DIR: '/elsewhere', NEW: 'template', A: '1' });
    assert.deepEqual(lastGuestEnvs(w, sbx.id), { DATA_DIR: '/elsewhere', NEW: 'template', A: '1' });
    // And with its template gone: the request's alone.
    await w.store.deleteTemplate(snap.templateId);
    assert.deepEqual((await createSandbox(w.core, { snapshot: 'old', envs: { A: '1' } })).envs, { A: '1' });
  });

  test('naming an old pause image without envs records the sandbox envs', async () => {
    const source = await sourceSandbox();
    const paused = await pauseSandbox(w.core, source.id);
    await w.store.updateSnapshot(paused.pausedSnapshotId ?? '', { envs: null });
    const named = await snapshotSandbox(w.core, source.id, { name: 'late' });
    assert.deepEqual(named.envs, source.envs);
    assert.deepEqual((await createSandbox(w.core, { snapshot: 'late' })).envs, source.envs);
  });

  test('a template image used as a snapshot gives the template envs', async () => {
    await setTemplateEnvs(w, { MODE: 'tpl' });
    const base = await w.store.findTemplateByName('base', 'default');
    assert.equal((await w.store.getSnapshot(base?.snapshotId ?? ''))?.envs, null);
    assert.deepEqual((await createSandbox(w.core, { snapshot: base?.snapshotId ?? '', envs: { A: '1' } })).envs, { MODE: 'tpl', A: '1' });
  });

  test('the API shape of a snapshot does not carry the envs', async () => {
    const source = await sourceSandbox();
    const snap = await snapshotSandbox(w.core, source.id, { name: 'golden' });
    const info = toSnapshotInfo(snap);
    assert.equal('envs' in info, false);
    assert.equal(JSON.stringify(info).includes('s3cret'), false);
  });
});
