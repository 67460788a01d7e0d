/**
 * The daemon's snapshot storage settings: flags and `RAMIFY_S3_*` resolved into a configuration, and
 * `serve()` against a real S3-compatible server (s3rver on 127.0.0.1) with good and bad settings.
 * Core's FAKE runtime and network stand in (no sandbox runs here; the storage is real).
 */
import { isRamifyError } from '@ramify/contracts';
import { FakeNetwork, FakeRuntime } from '@ramify/core/testing';
import { TieredSnapshotStorage } from '@ramify/storage';
import { startLocalS3Server, S3RVER_CREDENTIALS } from '@ramify/storage/testsuite';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { serve } from './serve.js';
import { resolveSnapshotStorage, type SnapshotStorageFlags } from './snapshot-storage.js';

describe('resolveSnapshotStorage', () => {
  test('local disk without a bucket; S3 from the environment, flags winning over it', () => {
    assert.deepEqual(resolveSnapshotStorage({}, {}), { kind: 'local' });
    const env = { RAMIFY_S3_BUCKET: 'envb', RAMIFY_S3_ENDPOINT: 'http://127.0.0.1:9000', RAMIFY_S3_REGION: 'eu-west-1', RAMIFY_S3_PATH_STYLE: '1', RAMIFY_S3_ACCESS_KEY_ID: 'AK', RAMIFY_S3_SECRET_ACCESS_KEY: 'SK', RAMIFY_SNAPSHOT_CACHE_BYTES: '1000', RAMIFY_S3_PREFIX: 'ramify' };
    assert.deepEqual(resolveSnapshotStorage({}, env), {
      kind: 's3',
      cacheBudgetBytes: 1000,
      connection: { bucket: 'envb', region: 'eu-west-1', endpoint: 'http://127.0.0.1:9000', prefix: 'ramify/', forcePathStyle: true, credentials: { accessKeyId: 'AK', secretAccessKey: 'SK' } },
    });
    const flags: SnapshotStorageFlags = { s3Bucket: 'flagb', s3Region: 'auto', s3PathStyle: false, snapshotCacheBytes: 0 };
    const resolved = resolveSnapshotStorage(flags, env);
    assert.ok(resolved.kind === 's3');
    assert.equal(resolved.connection.bucket, 'flagb');
    assert.equal(resolved.connection.region, 'auto');
    assert.equal(resolved.connection.forcePathStyle, false);
    assert.equal(resolved.cacheBudgetBytes, 0);
    const bare = resolveSnapshotStorage({ s3Bucket: 'b' }, {});
    assert.deepEqual(bare, { kind: 's3', cacheBudgetBytes: null, connection: { bucket: 'b', region: 'us-east-1', forcePathStyle: false } });
  });

  test('bad settings are refused, naming the setting', () => {
    const refused = (flags: SnapshotStorageFlags, env: NodeJS.ProcessEnv, pattern: RegExp): void =>
      assert.throws(() => resolveSnapshotStorage(flags, env), (error) => isRamifyError(error) && error.code === 'VALIDATION_FAILED' && pattern.test(error.message));
    refused({ s3Endpoint: 'http://x' }, {}, /the S3 endpoint given without a bucket: set --s3-bucket or RAMIFY_S3_BUCKET/);
    refused({}, { RAMIFY_SNAPSHOT_CACHE_BYTES: '5' }, /a snapshot cache budget given without a bucket/);
    refused({ s3Bucket: 'b', s3Endpoint: 'minio:9000' }, {}, /S3 endpoint 'minio:9000' is not an http\(s\) URL/);
    refused({ s3Bucket: 'b' }, { RAMIFY_S3_ACCESS_KEY_ID: 'AK' }, /RAMIFY_S3_ACCESS_KEY_ID and RAMIFY_S3_SECRET_ACCESS_KEY go together/);
    refused({ s3Bucket: 'b' }, { RAMIFY_SNAPSHOT_CACHE_BYTES: '10GB' }, /snapshot cache budget '10GB' is not a whole number of bytes/);
    refused({ s3Bucket: 'b' }, { RAMIFY_S3_PATH_STYLE: 'maybe' }, /RAMIFY_S3_PATH_STYLE='maybe' is not a boolean/);
  });
});

describe('serve() with S3 snapshot storage (s3rver on loopback)', async () => {
  const s3 = await startLocalS3Server({ bucket: 'ramify-daemon' });
  const dataDir = await mkdtemp(join(tmpdir(), 'ramify-daemon-s3-'));
  after(async () => {
    await s3.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  const start = (snapshotStorage: SnapshotStorageFlags) => {
    const runtime = new FakeRuntime();
    return serve({ dataDir, port: 0, logLevel: 'silent', print: () => undefined, snapshotStorage, overrides: { runtimes: [runtime], network: new FakeNetwork(), connectAgent: runtime.connectAgent, templateBuilder: null } });
  };
  const good: SnapshotStorageFlags = { s3Endpoint: s3.endpoint, s3Bucket: 'ramify-daemon', s3PathStyle: true, s3Credentials: { ...S3RVER_CREDENTIALS } };
  const startFails = async (flags: SnapshotStorageFlags, ...patterns: RegExp[]): Promise<void> => {
    await assert.rejects(start(flags), (error) => {
      assert.ok(isRamifyError(error), String(error));
      assert.equal(error.code, 'STORAGE_UNAVAILABLE');
      for (const pattern of patterns) assert.match(error.message, pattern);
      return true;
    });
  };

  test('good settings: the daemon starts with the tiered storage and says where snapshots live', async () => {
    const server = await start({ ...good, snapshotCacheBytes: 1 << 30 });
    try {
      assert.ok(server.core.storage instanceof TieredSnapshotStorage);
      assert.equal(server.snapshotStorage, `s3://ramify-daemon/ at ${s3.endpoint} (region us-east-1), cached in ${dataDir}/snapshots (budget: 1073741824 bytes)`);
    } finally {
      await server.close();
    }
  });

  test('wrong credentials fail the start, naming what failed and the variables to fix', async () => {
    await startFails(
      { ...good, s3Credentials: { accessKeyId: 'WRONG', secretAccessKey: 'WRONG' } },
      /snapshot storage s3:\/\/ramify-daemon\/ at http:\/\/127\.0\.0\.1:\d+ \(region us-east-1\): could not list the bucket: InvalidAccessKeyId \(HTTP 403\)/,
      /check RAMIFY_S3_ACCESS_KEY_ID and RAMIFY_S3_SECRET_ACCESS_KEY/,
    );
  });

  test('a missing bucket and an unreachable endpoint fail the start with their fix', async () => {
    await startFails({ ...good, s3Bucket: 'no-such-bucket' }, /could not list the bucket: NoSuchBucket \(HTTP 404\)/, /create the bucket or fix --s3-bucket/);
    const closed = await startLocalS3Server();
    await closed.close(); // a port nothing listens on any more
    await startFails({ ...good, s3Endpoint: closed.endpoint }, /could not list the bucket: ECONNREFUSED/, /check --s3-endpoint \/ RAMIFY_S3_ENDPOINT and that the server is up/);
  });
});
