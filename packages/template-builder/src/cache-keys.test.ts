import type { TemplateSpec } from '@ramify/contracts';
import { isRamifyError } from '@ramify/contracts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BASE_TEMPLATE_SPEC, REQUIRED_PACKAGES } from './base-spec.js';
import { computeLayerKeys, type LayerKeyInputs } from './cache-keys.js';
import { resolveTemplate, type ParentLookup } from './resolve.js';

const inputs: LayerKeyInputs = {
  arch: 'amd64',
  mirrors: ['deb http://deb.debian.org/debian bookworm main'],
  agentBundleSha256: 'a'.repeat(64),
  runtime: 'gvisor',
};
const noParents: ParentLookup = async () => null;

async function keysOf(spec: TemplateSpec, lookup: ParentLookup = noParents, extra: Partial<LayerKeyInputs> = {}) {
  return computeLayerKeys(await resolveTemplate(spec, lookup), { ...inputs, ...extra });
}

const spec: TemplateSpec = {
  name: 'app',
  from: 'base',
  packages: ['jq'],
  files: [{ path: '/etc/app.conf', content: 'x=1\n' }],
  run: ['echo one'],
  envs: { A: '1' },
};

describe('layer cache keys', () => {
  it('are deterministic', async () => {
    assert.deepEqual(await keysOf(spec), await keysOf({ ...spec }));
  });

  it('changing only run keeps the rootfs and files keys', async () => {
    const before = await keysOf(spec);
    const after = await keysOf({ ...spec, run: ['echo one', 'echo two'] });
    assert.equal(after.rootfs, before.rootfs);
    assert.equal(after.files, before.files);
    assert.notEqual(after.image, before.image);
  });

  it('changing envs or the name changes the image key only', async () => {
    const before = await keysOf(spec);
    for (const changed of [{ ...spec, envs: { A: '2' } }, { ...spec, name: 'app2' }]) {
      const after = await keysOf(changed);
      assert.equal(after.files, before.files);
      assert.notEqual(after.image, before.image);
    }
  });

  it('changing packages changes every key; their order does not matter', async () => {
    const before = await keysOf(spec);
    const after = await keysOf({ ...spec, packages: ['jq', 'vim'] });
    assert.notEqual(after.rootfs, before.rootfs);
    assert.notEqual(after.files, before.files);
    assert.notEqual(after.image, before.image);
    assert.deepEqual(await keysOf({ ...spec, packages: ['vim', 'jq'] }), after);
    assert.deepEqual(await keysOf({ ...spec, packages: ['jq', 'jq', 'vim'] }), after);
  });

  it('changing a file, its mode or the agent keeps the rootfs key', async () => {
    const before = await keysOf(spec);
    const variants = [
      keysOf({ ...spec, files: [{ path: '/etc/app.conf', content: 'x=2\n' }] }),
      keysOf({ ...spec, files: [{ path: '/etc/app.conf', content: 'x=1\n', mode: 0o600 }] }),
      keysOf(spec, noParents, { agentBundleSha256: 'c'.repeat(64) }),
    ];
    for (const after of await Promise.all(variants)) {
      assert.equal(after.rootfs, before.rootfs);
      assert.notEqual(after.files, before.files);
      assert.notEqual(after.image, before.image);
    }
  });

  it('changing the mirrors or the architecture changes every key', async () => {
    const before = await keysOf(spec);
    for (const extra of [{ arch: 'arm64' }, { mirrors: ['deb http://example.invalid/debian bookworm main'] }]) {
      const after = await keysOf(spec, noParents, extra);
      assert.notEqual(after.rootfs, before.rootfs);
      assert.notEqual(after.image, before.image);
    }
  });
});

describe('parent chain resolution', () => {
  it('falls back to the built-in base, and unions packages with the required ones', async () => {
    const resolved = await resolveTemplate(spec, noParents);
    assert.equal(resolved.parent, 'base');
    for (const pkg of [...(BASE_TEMPLATE_SPEC.packages ?? []), 'jq', ...REQUIRED_PACKAGES]) assert.ok(resolved.packages.includes(pkg), pkg);
    assert.deepEqual(resolved.packages, [...new Set(resolved.packages)].sort());
    const root = await resolveTemplate({ name: 'bare' }, noParents);
    assert.deepEqual(root.packages, [...REQUIRED_PACKAGES].sort());
  });

  it('folds a built parent: files overridden by path, run after the parent, envs overridden', async () => {
    const parent: TemplateSpec = {
      name: 'mid',
      packages: ['curl', ...REQUIRED_PACKAGES],
      files: [
        { path: '/etc/a', content: 'parent' },
        { path: '/etc/b', content: 'parent' },
      ],
      run: ['echo parent'],
      envs: { A: 'parent', B: 'parent' },
    };
    const lookup: ParentLookup = async (name) => (name === 'mid' ? parent : null);
    const resolved = await resolveTemplate({ name: 'leaf', from: 'mid', packages: ['jq'], files: [{ path: '/etc/a', content: 'child', mode: 0o600 }], run: ['echo child'], envs: { A: 'child' } }, lookup);
    assert.deepEqual(resolved.packages, [...new Set(['curl', 'jq', ...REQUIRED_PACKAGES])].sort());
    assert.deepEqual(
      resolved.files.map((file) => [file.path, file.data.toString(), file.mode]),
      [
        ['/etc/a', 'child', 0o600],
        ['/etc/b', 'parent', 0o644],
      ],
    );
    assert.deepEqual(resolved.run, ['echo parent', 'echo child']);
    assert.deepEqual(resolved.envs, { A: 'child', B: 'parent' });
    assert.equal(resolved.spec.from, undefined);
    // A child that adds only setup commands shares its parent's rootfs and files layers.
    const parentKeys = computeLayerKeys(await resolveTemplate(parent, noParents), inputs);
    const childKeys = computeLayerKeys(await resolveTemplate({ name: 'leaf2', from: 'mid', run: ['echo more'] }, lookup), inputs);
    assert.equal(childKeys.rootfs, parentKeys.rootfs);
    assert.equal(childKeys.files, parentKeys.files);
    assert.notEqual(childKeys.image, parentKeys.image);
  });

  it('decodes base64 file content', async () => {
    const resolved = await resolveTemplate({ name: 'b', files: [{ path: '/x', content: Buffer.from([0, 255]).toString('base64'), encoding: 'base64' }] }, noParents);
    assert.deepEqual([...resolved.files[0].data], [0, 255]);
  });

  it('rejects an unknown parent with TEMPLATE_NOT_FOUND', async () => {
    await assert.rejects(resolveTemplate({ name: 'x', from: 'nope' }, noParents), (error) => isRamifyError(error) && error.code === 'TEMPLATE_NOT_FOUND');
  });
});
