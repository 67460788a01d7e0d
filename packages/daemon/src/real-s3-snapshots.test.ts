/**
 * Snapshots on S3 through a REAL daemon (gVisor runsc, namespaces, agent) and a real S3-compatible
 * server (s3rver on 127.0.0.1, the AWS SDK unchanged), with a local cache budget of 0 bytes: a paused
 * sandbox's image is uploaded in the background, becomes durable, is evicted from local disk, and the
 * resume downloads and checks it: memory, processes and files come back (a counter keeps counting).
 * Then S3 goes down during a pause: the pause still succeeds (the image is safe locally), and the
 * upload completes once S3 is back.
 * Skipped, with the reason, when not root, without runsc, or without the prepared rootfs.
 */
import type { SnapshotStorage } from '@ramify/core';
import { startLocalS3Server, S3RVER_CREDENTIALS, waitDurable, type LocalS3Server } from '@ramify/storage/testsuite';
import { TieredSnapshotStorage } from '@ramify/storage';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { forceCleanup } from './real-egress-support.js';
import { serve, type RamifyServer } from './serve.js';
import { apiCaller, realRuntimeSkip, registerRootfsTemplate, shellCaller, stopRealDaemon, until } from './real-test-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs);

const PREFIX = 'rmos';
let dataDir: string;
let s3: LocalS3Server;
let server: RamifyServer | undefined;
let key = '';
const call = apiCaller(() => server?.url, () => key);
const sh = shellCaller(call);

/** The paused image of sandbox `id`. */
async function pausedSnapshot(id: string): Promise<string> {
  const record = await server!.core.store.getSandbox(id);
  assert.ok(record?.pausedSnapshotId, `sandbox ${id} has a paused image`);
  return record.pausedSnapshotId;
}

const cached = (snapshotId: string): boolean => existsSync(join(dataDir, 'snapshots', snapshotId, 'manifest.json'));
const count = async (id: string): Promise<number> => Number((await sh(id, 'cat /tmp/count')).trim());

describe('snapshots on S3 through a real daemon (gVisor, s3rver)', { skip, timeout: 300_000 }, () => {
  before(async () => {
    s3 = await startLocalS3Server({ bucket: 'ramify-real' });
    dataDir = await mkdtemp(join(tmpdir(), 'ramify-s3-e2e-'));
    server = await serve({
      dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: PREFIX },
      snapshotStorage: { s3Endpoint: s3.endpoint, s3Bucket: 'ramify-real', s3PathStyle: true, s3Credentials: { ...S3RVER_CREDENTIALS }, snapshotCacheBytes: 0 },
    });
    key = server.newApiKey ?? '';
    await registerRootfsTemplate(server.core, rootfs as string, { templateId: 'tpl_os', snapshotId: 'snap_os_base' });
  });
  after(async () => {
    if (server) {
      await stopRealDaemon(server, call).catch(async () => {
        await server?.close().catch(() => undefined);
        await forceCleanup(PREFIX, dataDir);
      });
    }
    await s3?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  test('a paused image evicted from local disk comes back from S3 on resume, its counter still counting', async () => {
    const storage: SnapshotStorage = server!.core.storage;
    assert.ok(storage instanceof TieredSnapshotStorage);
    const created = await call('POST', '/v1/sandboxes', { timeoutMs: 600_000 });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const id = created.json.id as string;
    await sh(id, `printf '%s\\n' 'echo $$ > /tmp/counter.pid; i=0; while true; do i=$((i+1)); echo $i > /tmp/count.new; mv /tmp/count.new /tmp/count; sleep 0.1; done' > /root/counter.sh`);
    await call('POST', `/v1/sandboxes/${id}/commands`, { cmd: 'sh /root/counter.sh', background: true });
    await sh(id, 'head -c 3000000 /dev/urandom > /root/data.bin && sha256sum /root/data.bin > /root/data.sum');
    await until(async () => (await count(id)) >= 5, 'the counter counts');
    const pid = (await sh(id, 'cat /tmp/counter.pid')).trim();
    assert.match(pid, /^\d+$/);

    const paused = await call('POST', `/v1/sandboxes/${id}/pause`);
    assert.equal(paused.status, 200, JSON.stringify(paused.json));
    const snapshotId = await pausedSnapshot(id);
    const durable = await waitDurable(storage, snapshotId, 60_000);
    assert.ok(durable.durableAt);
    assert.ok((await storage.store.listManifestIds()).includes(snapshotId), 'its manifest is in the bucket');
    await until(async () => !cached(snapshotId), 'the 0-byte cache budget evicts the durable image', 30_000);

    const resumed = await call('POST', `/v1/sandboxes/${id}/resume`);
    assert.equal(resumed.status, 200, JSON.stringify(resumed.json));
    const afterResume = await count(id);
    assert.ok(afterResume >= 5, `the counter's value came back (${afterResume})`);
    await until(async () => (await count(id)) > afterResume, 'the counter counts on after the resume');
    assert.match(await sh(id, `kill -0 ${pid} && echo alive`), /alive/, 'the same process counts on');
    assert.match(await sh(id, 'sha256sum -c /root/data.sum'), /data\.bin: OK/);
  });

  test('S3 down during a pause: the pause succeeds locally and the upload completes once S3 is back', async () => {
    const storage = server!.core.storage as TieredSnapshotStorage;
    const created = await call('POST', '/v1/sandboxes', { timeoutMs: 600_000 });
    const id = created.json.id as string;
    await sh(id, 'echo kept > /root/kept.txt');
    await s3.stop();
    let snapshotId: string;
    try {
      const paused = await call('POST', `/v1/sandboxes/${id}/pause`);
      assert.equal(paused.status, 200, JSON.stringify(paused.json));
      snapshotId = await pausedSnapshot(id);
      await until(async () => (await storage.uploadState(snapshotId)).failedAttempts > 0, 'an upload attempt fails', 30_000);
      assert.equal((await storage.uploadState(snapshotId)).state, 'pending');
      assert.ok(cached(snapshotId), 'the only copy is kept locally');
    } finally {
      await s3.start();
    }
    await waitDurable(storage, snapshotId, 90_000);
    const resumed = await call('POST', `/v1/sandboxes/${id}/resume`);
    assert.equal(resumed.status, 200, JSON.stringify(resumed.json));
    assert.equal((await sh(id, 'cat /root/kept.txt')).trim(), 'kept');
  });
});
