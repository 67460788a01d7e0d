/**
 * Use-case tests (FAKE runtime and agent; real SQLite store and snapshot storage) of collecting template
 * images a rebuild replaced, and of deleting a template:
 * refused while a live sandbox made from it or a template built from it needs it; then the row, the
 * image rows and the image files are gone; named snapshots taken from its sandboxes still work.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { RamifyError } from '@ramify/contracts';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from '../lifecycle/create.js';
import { killSandbox } from '../lifecycle/kill.js';
import { pauseSandbox } from '../lifecycle/pause.js';
import { snapshotSandbox } from '../lifecycle/snapshot.js';
import { reconcile } from '../lifecycle/reconcile.js';
import { deleteTemplate } from './templates.js';

let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld();
});
afterEach(async () => {
  await w.dispose();
});

function conflictNaming(...needed: RegExp[]): (err: unknown) => boolean {
  return (err) => {
    assert.ok(err instanceof RamifyError, String(err));
    assert.equal(err.code, 'CONFLICT');
    for (const pattern of needed) assert.match(err.message, pattern);
    return true;
  };
}

describe('template images a rebuild replaced', () => {
  test('are kept while a sandbox made from them lives, collected at its kill; unreferenced ones go at reconcile', async () => {
    const template = await w.store.findTemplateByName('base', 'default');
    assert.ok(template);
    const old = template.snapshotId;
    const sbx = await createSandbox(w.core, {});
    // A rebuild: the template now lists a new image (the old row stays until nothing needs it).
    const fresh = { ...(await w.store.getSnapshot(old))!, id: 'snap_tpl_new' };
    await w.store.insertSnapshot(fresh);
    await w.store.putTemplate({ ...template, snapshotId: fresh.id, images: [{ runtime: template.runtime, snapshotId: fresh.id }] });
    await reconcile(w.core);
    assert.ok(await w.store.getSnapshot(old), 'a live sandbox was made from it: kept');
    await killSandbox(w.core, sbx.id);
    assert.equal(await w.store.getSnapshot(old), null, 'collected with the last sandbox made from it');

    const orphan = { ...fresh, id: 'snap_tpl_orphan' };
    await w.store.insertSnapshot(orphan);
    await reconcile(w.core);
    assert.equal(await w.store.getSnapshot(orphan.id), null, 'no template lists it, nothing made from it: swept at start-up');
    assert.ok(await w.store.getSnapshot(fresh.id), 'the listed image stays');
  });
});

describe('deleteTemplate', () => {
  test('refused while a running or paused sandbox was made from it; once they are killed, row, images and files go', async () => {
    const template = await w.store.findTemplateByName('base', 'default');
    assert.ok(template);
    const imageDir = (await w.storage.open(template.snapshotId)).imageDir;
    const running = await createSandbox(w.core, {});
    const paused = await pauseSandbox(w.core, (await createSandbox(w.core, {})).id);
    await assert.rejects(
      deleteTemplate(w.core, 'base'),
      conflictNaming(new RegExp(`sandbox ${running.id}`), new RegExp(`sandbox ${paused.id}`), /; kill those sandboxes first$/),
    );
    assert.ok(await w.store.findTemplateByName('base', 'default'), 'a refused delete changes nothing');

    await killSandbox(w.core, running.id);
    await killSandbox(w.core, paused.id);
    await deleteTemplate(w.core, template.id);
    assert.equal(await w.store.getTemplate(template.id), null);
    assert.equal(await w.store.getSnapshot(template.snapshotId), null);
    assert.equal(existsSync(imageDir), false, 'the image files are deleted');
    await assert.rejects(deleteTemplate(w.core, 'base'), (err: unknown) => err instanceof RamifyError && err.code === 'TEMPLATE_NOT_FOUND');
    await assert.rejects(createSandbox(w.core, {}), (err: unknown) => err instanceof RamifyError && err.code === 'TEMPLATE_NOT_FOUND');
  });

  test('refused while another template is built from it; the message asks only for what applies', async () => {
    const base = await w.store.findTemplateByName('base', 'default');
    assert.ok(base);
    await w.store.putTemplate({ ...base, id: 'tpl_child', name: 'child', parent: 'base' });
    await assert.rejects(deleteTemplate(w.core, 'base'), conflictNaming(/needed by template child \(built from it\); delete that template first$/));
    const sbx = await createSandbox(w.core, {});
    await assert.rejects(
      deleteTemplate(w.core, 'base'),
      conflictNaming(new RegExp(`needed by template child \\(built from it\\), sandbox ${sbx.id}; kill that sandbox and delete that template first$`)),
    );
  });

  test('a named snapshot outlives its template: sandboxes are still created from it', async () => {
    const sbx = await createSandbox(w.core, {});
    await snapshotSandbox(w.core, sbx.id, { name: 'keep' });
    await killSandbox(w.core, sbx.id);
    await deleteTemplate(w.core, 'base');
    const fromSnapshot = await createSandbox(w.core, { snapshot: 'keep' });
    assert.equal(fromSnapshot.state, 'running');
  });
});
