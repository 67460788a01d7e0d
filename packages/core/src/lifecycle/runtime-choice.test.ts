/**
 * Use-case tests (FAKE runtimes and agent; real SQLite store) of choosing a sandbox's runtime: a template
 * carries one image per runtime it was built for; a create asks for a runtime or gets the daemon's default.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeRuntime } from '../testing/fake-ports.js';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from './create.js';

let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld();
});
afterEach(async () => {
  await w.dispose();
});

describe('runtime choice on create', () => {
  test('a runtime the host lacks: RUNTIME_UNAVAILABLE quoting what is missing, nothing created', async () => {
    w.core.unavailableRuntimes = { microvm: 'qemu-system-x86_64 not found (apt-get install qemu-system-x86)' };
    await assert.rejects(createSandbox(w.core, { runtime: 'microvm' }), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'RUNTIME_UNAVAILABLE');
      assert.match(err.message, /runtime 'microvm' is not available on this host: qemu-system-x86_64 not found/);
      return true;
    });
    assert.deepEqual((await w.store.listSandboxes({})).sandboxes, []);
  });

  test('a template without an image for the runtime asked for: TEMPLATE_NOT_BUILT naming the build command', async () => {
    w.core.runtimes.push(new FakeRuntime({}, 'microvm'));
    await assert.rejects(createSandbox(w.core, { runtime: 'microvm' }), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'TEMPLATE_NOT_BUILT');
      assert.match(err.message, /template 'base' has no microvm image \(built for: gvisor\).*ramify template build <its spec file> --runtime microvm.*ramify template build base --runtime microvm/);
      return true;
    });
  });

  test('without a runtime the default runtime\'s image is used; an explicit runtime picks its own image', async () => {
    const template = await w.store.findTemplateByName('base', 'default');
    assert.ok(template);
    await w.store.putTemplate({ ...template, images: [...template.images, { runtime: 'microvm', snapshotId: 'snap_vm' }] });
    const stored = await w.store.findTemplateByName('base', 'default');
    assert.deepEqual(stored?.images.map((i) => i.runtime), ['gvisor', 'microvm']);
    const plain = await createSandbox(w.core, {});
    assert.equal(plain.runtime, 'gvisor');
    assert.equal(plain.sourceSnapshotId, template.snapshotId);
    const explicit = await createSandbox(w.core, { runtime: 'gvisor' });
    assert.equal(explicit.sourceSnapshotId, template.snapshotId);
  });
});
