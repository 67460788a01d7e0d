/**
 * What an operator sees when `ramify serve` (the CLI, a child process) cannot reach what it is configured
 * with (issue 16's bad input): an unreachable database and wrong S3 credentials stop it at once, exit
 * code 1, with one line naming what failed, where (never a secret) and how to fix it. The same errors'
 * codes and wording in-process: `serve-postgres.test.ts`, `snapshot-storage.test.ts`. A real s3rver on
 * 127.0.0.1; the database URL names a port nothing listens on. The error is said once: on a pipe (a
 * terminal, journald) only the CLI's line; on a file (a log, `--detach`'s serve.log) also the daemon's
 * `ramify failed to start` JSON line, which `--detach` reads back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalS3Server } from '@ramify/storage/testsuite';
import { CLI_MAIN, runCli } from './testing/daemon-process.js';

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

/** The JSON log lines of `output` that say `ramify failed to start`. */
const failedLines = (output: string): unknown[] => output.split('\n').filter((l) => l.startsWith('{') && (JSON.parse(l) as { msg?: unknown }).msg === 'ramify failed to start');

const UNREACHABLE = ['--database-url', 'postgres://ramify:s3cret@127.0.0.1:1/ramify'];

test('a failed start on a pipe (a terminal, journald) is said once: the line for a human, no JSON line', async () => {
  const { code, output } = await serveExits(UNREACHABLE);
  assert.equal(code, 1, output);
  assert.equal(output.match(/DATABASE_UNAVAILABLE/g)?.length, 1, `once: ${output}`);
  assert.match(output, /^ramify: DATABASE_UNAVAILABLE: /m);
  assert.deepEqual(failedLines(output), [], output);
});

test("a failed start with stderr in a file (a log) keeps the daemon's JSON line there, beside the line for a human", async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'ramify-serve-errors-'));
  try {
    const logPath = join(dataDir, 'serve.log');
    const log = openSync(logPath, 'a');
    const child = spawn(process.execPath, [CLI_MAIN, 'serve', '--data-dir', dataDir, '--port', '0', '--ssh-listen', 'off', '--ingress-listen', 'off', '--warm-pool', 'off', '--network-prefix', 'rcq', ...UNREACHABLE],
      { stdio: ['ignore', log, log] });
    closeSync(log);
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    clearTimeout(timer);
    const output = await readFile(logPath, 'utf8');
    assert.equal(code, 1, output);
    assert.match(output, /^ramify: DATABASE_UNAVAILABLE: /m);
    assert.equal(failedLines(output).length, 1, `the JSON line --detach reads back: ${output}`);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});
