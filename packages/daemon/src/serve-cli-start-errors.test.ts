/**
 * What an operator sees when `ramify serve` (the CLI, a child process) cannot reach what it is configured
 * with (issue 16's bad input): an unreachable database and wrong S3 credentials stop it at once, exit
 * code 1, with one line naming what failed, where (never a secret) and how to fix it. The same errors'
 * codes and wording in-process: `serve-postgres.test.ts`, `snapshot-storage.test.ts`. A real s3rver on
 * 127.0.0.1; the database URL names a port nothing listens on.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalS3Server } from '@ramify/storage/testsuite';
import { runCli } from './testing/daemon-process.js';

/** Run `ramify serve` with `args` and `env` until it exits (at most 60 s); its exit code and output. */
async function serveExits(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'ramify-serve-errors-'));
  try {
    return await runCli(['serve', '--data-dir', dataDir, '--port', '0', '--ssh-listen', 'off', '--ingress-listen', 'off', '--warm-pool', 'off', '--network-prefix', 'rcq', ...args], { env });
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

test('an unreachable database stops ramify serve: exit 1, the server named without its password, the fix', async () => {
  const { code, output } = await serveExits(['--database-url', 'postgres://ramify:s3cret@127.0.0.1:1/ramify']);
  assert.equal(code, 1, output);
  assert.match(output, /^ramify: DATABASE_UNAVAILABLE: cannot open the database at postgres:\/\/ramify@127\.0\.0\.1:1\/ramify: .*ECONNREFUSED/m);
  assert.match(output, /start Postgres .* or correct the host and port in RAMIFY_DATABASE_URL \(or --database-url\)/);
  assert.doesNotMatch(output, /s3cret/);
});

test('wrong S3 credentials stop ramify serve: exit 1, the bucket and the refusal named, the variables to fix', async () => {
  const s3 = await startLocalS3Server({ bucket: 'ramify-cli' });
  try {
    const { code, output } = await serveExits(['--s3-bucket', 'ramify-cli', '--s3-endpoint', s3.endpoint, '--s3-path-style'], {
      RAMIFY_S3_ACCESS_KEY_ID: 'WRONGKEY', RAMIFY_S3_SECRET_ACCESS_KEY: 'wrong-secret-value',
    });
    assert.equal(code, 1, output);
    assert.match(output, /^ramify: STORAGE_UNAVAILABLE: snapshot storage s3:\/\/ramify-cli\/ at http:\/\/127\.0\.0\.1:\d+ \(region us-east-1\): could not list the bucket: InvalidAccessKeyId \(HTTP 403\)/m);
    assert.match(output, /check RAMIFY_S3_ACCESS_KEY_ID and RAMIFY_S3_SECRET_ACCESS_KEY/);
    assert.doesNotMatch(output, /wrong-secret-value/);
  } finally {
    await s3.close();
  }
});
