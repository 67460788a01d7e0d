/**
 * The warm pool across a template rebuild, on the REAL gVisor runtime of an in-process daemon (prefix
 * `rwq`, `warmPool: base=1`): a rebuild through core's `buildTemplate` releases the pooled sandbox of
 * the replaced image before that image is collected, the pool fills again from the new image, and a
 * create claims that one. The builder here only stands in for the root filesystem step (debootstrap takes
 * minutes): it boots the prepared rootfs and checkpoints it into a new image, as a real build's last step
 * does, with the real runtime. Then the same claim on the microVM runtime (QEMU). Both RAMIFY_TEST_FULL=1 only.
 * Skipped, with the reason, when not root, without runsc, or without the prepared rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTemplate, hostnameFor, type Core } from '@ramify/core';
import { openRealDaemon, realRuntimeSkip, registerRootfsTemplate, shellCaller, until, type RealDaemon } from './real-test-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc']);

/** The runtime's sandbox ids on this daemon. */
const instances = (core: Core): Promise<string[]> => core.runtimes[0]!.list();
const idle = (core: Core): number => core.pool.stats().idle;

describe('warm pool across a template rebuild (real gVisor, in-process daemon)', { skip: skip || (process.env.RAMIFY_TEST_FULL !== '1' && 'RAMIFY_TEST_FULL=1 only: two template images and three pool fills (core\'s pool tests cover the drain with the fake runtime)') }, () => {
  let daemon: RealDaemon;
  before(async () => {
    daemon = await openRealDaemon({ runtime: 'gvisor', prefix: 'rwq', rootfs: rootfs ?? '', templateId: 'tpl_rwq', warmPool: 'base=1' });
  });
  after(async () => {
    await daemon?.close();
  });

  test('a rebuild drains the old image from the pool before collecting it; the pool refills from the new one', async () => {
    const core = daemon.server.core;
    await until(async () => idle(core) === 1, 'the pool holds one sandbox', 120_000);
    const [pooledOld] = await instances(core);
    assert.ok(pooledOld, 'the pooled sandbox runs');
    const oldImage = (await core.store.findTemplateByName('base', 'default'))!.snapshotId;

    // Stand-in for the rootfs step only: boot the prepared rootfs and checkpoint it as the new image.
    Object.assign(core, {
      templateBuilder: {
        build: async () => {
          await registerRootfsTemplate(core, rootfs!, { templateId: 'tpl_rwq', snapshotId: 'snap_rwq_v2' });
          return (await core.store.findTemplateByName('base', 'default'))!;
        },
      },
    });
    await buildTemplate(core, { name: 'base' }, { onEvent: () => undefined });
    assert.ok(!(await instances(core)).includes(pooledOld), 'the sandbox of the replaced image is released');
    assert.equal(await core.store.getSnapshot(oldImage), null, 'the replaced image is collected: nothing holds it');

    await until(async () => idle(core) === 1, 'the pool holds one sandbox of the new image', 120_000);
    const hits = core.pool.stats().hits;
    const r = await daemon.call('POST', '/v1/sandboxes', { template: 'base' });
    assert.equal(r.status, 201, JSON.stringify(r.json));
    assert.equal(core.pool.stats().hits, hits + 1, 'claimed from the pool');
    assert.equal((await core.store.getSandbox(r.json.id))!.sourceSnapshotId, 'snap_rwq_v2');
    assert.equal((await shellCaller(daemon.call)(r.json.id, 'hostname')).trim(), hostnameFor(r.json.id));
  });
});

describe('warm pool on the microVM runtime (real QEMU, in-process daemon)', { skip: skip || (process.env.RAMIFY_TEST_FULL !== '1' && 'RAMIFY_TEST_FULL=1 only: a microVM under TCG takes seconds to restore') }, () => {
  let daemon: RealDaemon;
  before(async () => {
    daemon = await openRealDaemon({ runtime: 'microvm', prefix: 'rwv', rootfs: rootfs ?? '', templateId: 'tpl_rwv', warmPool: 'base=1' });
  });
  after(async () => {
    await daemon?.close();
  });

  test('a create claims the pooled microVM: its own hostname, the request\'s envs, a fresh one pooled again', async () => {
    const core = daemon.server.core;
    await until(async () => idle(core) === 1, 'the pool holds one microVM', 300_000);
    const r = await daemon.call('POST', '/v1/sandboxes', { template: 'base', envs: { WHO: 'vm' } });
    assert.equal(r.status, 201, JSON.stringify(r.json));
    assert.equal(core.pool.stats().hits, 1);
    const out = (await shellCaller(daemon.call)(r.json.id, 'echo "$WHO"; hostname')).trim().split('\n');
    assert.deepEqual(out, ['vm', hostnameFor(r.json.id)]);
    await until(async () => idle(core) === 1, 'the pool refilled', 300_000);
  });
});
