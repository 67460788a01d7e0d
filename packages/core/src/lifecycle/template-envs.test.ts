/**
 * A template's `envs` reach its sandboxes: merged with the create request's at create (the request's win
 * per key), stored as the sandbox's envs, and given to the guest at every start, resume and fork.
 * FAKE runtime, network and agent (core logic only) and a real SQLite store.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestWorld, lastGuestEnvs, setTemplateEnvs, type TestWorld } from '../testing/world.js';
import { listTemplates } from '../catalog/templates.js';
import { createSandbox } from './create.js';
import { forkSandbox } from './fork.js';
import { getSandbox } from './get.js';
import { pauseSandbox } from './pause.js';
import { toTemplateInfo } from './records.js';
import { resumeSandbox } from './resume.js';

let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld();
});
afterEach(async () => {
  await w.dispose();
});


describe('template envs (fake runtime)', () => {
  test('template only: the sandbox starts with the template envs, stored as its own', async () => {
    await setTemplateEnvs(w, { DATA_DIR: '/srv/data', MODE: 'tpl' });
    const sbx = await createSandbox(w.core, { template: 'base' });
    assert.deepEqual(sbx.envs, { DATA_DIR: '/srv/data', MODE: 'tpl' });
    assert.deepEqual((await getSandbox(w.core, sbx.id)).envs, { DATA_DIR: '/srv/data', MODE: 'tpl' });
    assert.deepEqual(lastGuestEnvs(w, sbx.id), { DATA_DIR: '/srv/data', MODE: 'tpl' });
  });

  test('create only: a template without envs gives the request envs alone', async () => {
    const sbx = await createSandbox(w.core, { envs: { FOO: 'bar' } });
    assert.deepEqual(sbx.envs, { FOO: 'bar' });
    assert.deepEqual(lastGuestEnvs(w, sbx.id), { FOO: 'bar' });
    const none = await createSandbox(w.core, {});
    assert.deepEqual(none.envs, {});
    assert.deepEqual(lastGuestEnvs(w, none.id), {});
  });

  test('override: the request wins per key, other template keys stay', async () => {
    await setTemplateEnvs(w, { DATA_DIR: '/srv/data', MODE: 'tpl' });
    const sbx = await createSandbox(w.core, { envs: { MODE: 'mine', EXTRA: '1', DATA_DIR: '' } });
    assert.deepEqual(sbx.envs, { DATA_DIR: '', MODE: 'mine', EXTRA: '1' });
    assert.deepEqual(lastGuestEnvs(w, sbx.id), { DATA_DIR: '', MODE: 'mine', EXTRA: '1' });
    // The template record is not modified by the merge.
    assert.deepEqual((await w.store.findTemplateByName('base', 'default'))?.envs, { DATA_DIR: '/srv/data', MODE: 'tpl' });
  });

  test('fixed at create: a later change of the template does not reach the sandbox on resume', async () => {
    await setTemplateEnvs(w, { V: '1' });
    const sbx = await createSandbox(w.core, {});
    await pauseSandbox(w.core, sbx.id);
    await setTemplateEnvs(w, { V: '2' });
    await resumeSandbox(w.core, sbx.id);
    assert.deepEqual(lastGuestEnvs(w, sbx.id), { V: '1' });
    // A new sandbox gets the new ones.
    assert.deepEqual((await createSandbox(w.core, {})).envs, { V: '2' });
  });

  test('fork inherits the parent envs (template + request), not the template current ones', async () => {
    await setTemplateEnvs(w, { DATA_DIR: '/srv/data', MODE: 'tpl' });
    const parent = await createSandbox(w.core, { envs: { MODE: 'parent' } });
    await setTemplateEnvs(w, { DATA_DIR: '/elsewhere' });
    const children = await forkSandbox(w.core, parent.id, { count: 2 });
    for (const child of children) {
      assert.deepEqual(child.envs, { DATA_DIR: '/srv/data', MODE: 'parent' });
      assert.deepEqual(lastGuestEnvs(w, child.id), { DATA_DIR: '/srv/data', MODE: 'parent' });
    }
    // The parent, restored after the fork point, keeps its own.
    assert.deepEqual(lastGuestEnvs(w, parent.id), { DATA_DIR: '/srv/data', MODE: 'parent' });
  });

  // Creating from a snapshot (its sandbox's envs, recorded with it): snapshot-envs.test.ts.

  test('listed templates show their envs (API shape), a copy of the record', async () => {
    await setTemplateEnvs(w, { DATA_DIR: '/srv/data' });
    const [record] = await listTemplates(w.core);
    const info = toTemplateInfo(record);
    info.envs.X = 'y';
    assert.deepEqual(info.envs, { DATA_DIR: '/srv/data', X: 'y' });
    assert.deepEqual(record.envs, { DATA_DIR: '/srv/data' });
  });
});
