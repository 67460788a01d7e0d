/**
 * Conformance cases: snapshots and templates (unique names per team, patches, references).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sandbox, snapshot, team, template, withStore, type StoreHarness } from './harness.js';

export function snapshotCases(h: StoreHarness): void {
  test('snapshots: unique names per team, updates, references by live sandboxes and templates', async () => {
    await withStore(h, 'snapshot_basics', async (store) => {
      const s1 = snapshot({ name: 'golden', kind: 'named' });
      await store.insertSnapshot(s1);
      await assert.rejects(store.insertSnapshot(snapshot({ name: 'golden' })), { code: 'CONFLICT' });
      await assert.rejects(store.insertSnapshot(s1), { code: 'CONFLICT' });
      await store.insertTeam(team('acme'));
      await store.insertSnapshot(snapshot({ name: 'golden', teamId: 'acme' }));
      assert.equal((await store.findSnapshotByName('golden', 'default'))?.id, s1.id);
      const s2 = snapshot({ status: 'pending' });
      await store.insertSnapshot(s2);
      await assert.rejects(store.updateSnapshot(s2.id, { name: 'golden' }), { code: 'CONFLICT' });
      await assert.rejects(store.updateSnapshot('snap_missing', { status: 'ready' }), { code: 'SNAPSHOT_NOT_FOUND' });
      assert.equal((await store.updateSnapshot(s2.id, { status: 'ready', sizeBytes: 42 })).sizeBytes, 42);
      assert.equal((await store.getSnapshot(s1.id))?.envs, null);
      assert.deepEqual((await store.updateSnapshot(s2.id, { envs: { DATA_DIR: '/srv/data', EMPTY: '' } })).envs, { DATA_DIR: '/srv/data', EMPTY: '' });
      assert.deepEqual((await store.updateSnapshot(s2.id, { envs: { B: '2' } })).envs, { B: '2' });
      const s3 = snapshot({ envs: { X: 'y' } });
      await store.insertSnapshot(s3);
      assert.deepEqual((await store.getSnapshot(s3.id))?.envs, { X: 'y' });
      await store.deleteSnapshot(s3.id);
      await store.deleteSnapshot(s3.id);

      const paused = sandbox({ state: 'paused', pausedSnapshotId: s2.id });
      const child = sandbox({ sourceSnapshotId: s2.id });
      const dead = sandbox({ state: 'killed', sourceSnapshotId: s2.id });
      for (const r of [paused, child, dead]) await store.insertSandbox(r);
      await store.putTemplate(template({ id: 'tpl_x', snapshotId: s1.id }));
      assert.deepEqual(await store.snapshotReferences(s2.id), { pausedBy: [paused.id], sourceOf: [child.id], templates: [] });
      assert.deepEqual(await store.snapshotReferences(s1.id), { pausedBy: [], sourceOf: [], templates: ['tpl_x'] });
      assert.deepEqual((await store.listSnapshots({ kinds: ['named'] })).map((s) => s.id), [s1.id]);
      await store.deleteSnapshot(s1.id);
      assert.equal(await store.getSnapshot(s1.id), null);
    });
  });

  test('snapshots: recorded egress, ingress, auto-pause and networks round-trip; listed newest first, by sandbox', async () => {
    await withStore(h, 'snapshot_fields', async (store) => {
      const full = snapshot({
        sandboxId: 'sbx_src', createdAt: 10, diskSizeMB: 1024, envs: { A: '1' }, egress: { mode: 'allowlist', rules: ['*.example.com:443'] },
        ingress: { ports: [{ port: 8080, access: 'public' }], autoResume: true }, autoPause: { idleMs: 30_000 }, networks: [{ network: 'backend', alias: 'db' }],
      });
      const older = snapshot({ sandboxId: 'sbx_src', createdAt: 5, egress: { mode: 'deny-all', rules: [] } });
      const other = snapshot({ sandboxId: 'sbx_other', createdAt: 20 });
      for (const s of [full, older, other]) await store.insertSnapshot(s);
      assert.deepEqual(await store.getSnapshot(full.id), full);
      assert.deepEqual((await store.listSnapshots({ sandboxId: 'sbx_src' })).map((s) => s.id), [full.id, older.id]);
      assert.deepEqual((await store.listSnapshots()).map((s) => s.id), [other.id, full.id, older.id]);
      const patched = await store.updateSnapshot(older.id, { egress: { mode: 'open', rules: [] }, networks: [], autoPause: null, ingress: null });
      assert.deepEqual([patched.egress, patched.networks, patched.autoPause ?? null, patched.ingress ?? null], [{ mode: 'open', rules: [] }, [], null, null]);
      assert.equal((await store.updateSnapshot(older.id, { templateId: 'tpl_rebuilt' })).templateId, 'tpl_rebuilt', 'a template image row follows its template');
    });
  });

  test('templates: upsert by id, unique names per team, images and envs, referenced snapshots', async () => {
    await withStore(h, 'templates', async (store) => {
      const t = template();
      await store.putTemplate(t);
      await store.putTemplate({ ...t, specHash: 'h2' });
      assert.equal((await store.findTemplateByName('base', 'default'))?.specHash, 'h2');
      await assert.rejects(store.putTemplate({ ...t, id: 'tpl_b' }), { code: 'CONFLICT' });
      assert.equal((await store.listTemplates()).length, 1);
      await store.putTemplate({ ...t, images: [{ runtime: 'microvm', snapshotId: 'snap_vm' }] });
      assert.deepEqual((await store.getTemplate('tpl_a'))?.images, [{ runtime: 'gvisor', snapshotId: 'snap_1' }, { runtime: 'microvm', snapshotId: 'snap_vm' }]);
      assert.deepEqual((await store.snapshotReferences('snap_vm')).templates, ['tpl_a']);
      assert.deepEqual((await store.snapshotReferences('snap_v')).templates, [], 'a prefix of an image id is not a reference');
      await store.putTemplate({ ...t, envs: { DATA_DIR: '/srv/data', EMPTY: '' } });
      assert.deepEqual((await store.getTemplate('tpl_a'))?.envs, { DATA_DIR: '/srv/data', EMPTY: '' });
      await store.putTemplate({ ...t, envs: { B: '2' } });
      assert.deepEqual((await store.findTemplateByName('base', 'default'))?.envs, { B: '2' });
      await store.insertTeam(team('acme'));
      await store.putTemplate(template({ id: 'tpl_acme', teamId: 'acme' }));
      assert.deepEqual((await store.listTemplates()).map((x) => `${x.name}@${x.teamId}`), ['base@acme', 'base@default']);
      assert.equal((await store.findTemplateByName('base', 'acme'))?.id, 'tpl_acme');
      await store.deleteTemplate('tpl_acme');
      assert.equal(await store.getTemplate('tpl_acme'), null);
    });
  });
}
