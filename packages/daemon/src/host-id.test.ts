/** The daemon's host id: made once in the data directory, set by `--host-id` the first time, kept after (real files). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOST_ID_FILE, resolveHostId } from './host-id.js';

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'ramify-host-id-'));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('a fresh data directory gets a generated id, kept in a 0600 file and returned on every later start', () =>
  withDir(async (dir) => {
    const first = await resolveHostId(dir);
    assert.match(first, /^host-[0-9a-f]{12}$/);
    assert.equal((await readFile(join(dir, HOST_ID_FILE), 'utf8')).trim(), first);
    assert.equal((await stat(join(dir, HOST_ID_FILE))).mode & 0o777, 0o600);
    assert.equal(await resolveHostId(dir), first);
    assert.equal(await resolveHostId(dir, first), first, 'passing the stored id is fine');
  }));

test('--host-id sets the id the first time; a different one later is refused naming the stored id, and nothing changes', () =>
  withDir(async (dir) => {
    assert.equal(await resolveHostId(dir, 'host-a'), 'host-a');
    await assert.rejects(resolveHostId(dir, 'host-b'), (err: { code?: string; message: string }) =>
      err.code === 'VALIDATION_FAILED' && err.message.includes("belongs to host 'host-a'") && err.message.includes('drop --host-id'));
    assert.equal(await resolveHostId(dir), 'host-a');
  }));

test('a malformed id is refused before anything is written', () =>
  withDir(async (dir) => {
    for (const bad of ['', 'Host A', '-a', 'a'.repeat(64), 'a/b']) {
      await assert.rejects(resolveHostId(dir, bad), { code: 'VALIDATION_FAILED' });
    }
    await assert.rejects(readFile(join(dir, HOST_ID_FILE)), { code: 'ENOENT' });
  }));
