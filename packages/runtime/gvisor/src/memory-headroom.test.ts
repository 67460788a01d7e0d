/**
 * The cgroup headroom, on a synthetic cgroup directory: the limit is raised once a process carrying
 * `--total-memory` (runsc's sandbox process) is in it, while runsc still runs, or when runsc returned.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { RamifyError } from '@ramify/contracts';
import { cgroupMemoryFiles, headroomMB, withCheckpointRoom, withHeadroom } from './memory-headroom.js';

const dir = mkdtempSync(join(tmpdir(), 'ramify-headroom-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('headroom grows with the sandbox: 128 MiB plus an eighth', () => {
  assert.equal(headroomMB(256), 160);
  assert.equal(headroomMB(512), 192);
  assert.equal(headroomMB(4096), 640);
});

test('finds the memory controller of cgroup v1 and v2 layouts', () => {
  const v1 = join(dir, 'v1');
  mkdirSync(join(v1, 'memory'), { recursive: true });
  assert.deepEqual(cgroupMemoryFiles('/ramify/sbx.1', v1), { limit: `${v1}/memory/ramify/sbx.1/memory.limit_in_bytes`, procs: `${v1}/memory/ramify/sbx.1/cgroup.procs` });
  const v2 = join(dir, 'v2');
  mkdirSync(v2, { recursive: true });
  assert.deepEqual(cgroupMemoryFiles('/ramify/sbx.1', v2), { limit: `${v2}/ramify/sbx.1/memory.max`, procs: `${v2}/ramify/sbx.1/cgroup.procs` });
});

function cgroup(name: string): { limit: string; procs: string } {
  const d = join(dir, name);
  mkdirSync(d, { recursive: true });
  const files = { limit: join(d, 'memory.limit_in_bytes'), procs: join(d, 'cgroup.procs') };
  writeFileSync(files.limit, String(256 << 20));
  writeFileSync(files.procs, '');
  return files;
}

test('raised as soon as the sandbox process is in the cgroup, before runsc returns', async () => {
  const files = cgroup('early');
  // Stands in for `runsc-sandbox ... --total-memory N`: only its command line matters.
  const sandbox = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)', '--', '--total-memory', String(256 << 20)], { stdio: 'ignore' });
  try {
    let limitSeenByRunsc = '';
    await withHeadroom(files, 416 << 20, async () => {
      limitSeenByRunsc = readFileSync(files.limit, 'utf8');
      writeFileSync(files.procs, `${process.pid}\n${sandbox.pid}\n`);
      for (let i = 0; i < 200 && readFileSync(files.limit, 'utf8') !== String(416 << 20); i++) await sleep(5);
      assert.equal(readFileSync(files.limit, 'utf8'), String(416 << 20), 'raised while runsc is still running');
    });
    assert.equal(limitSeenByRunsc, String(256 << 20), 'runsc read the limit of the spec');
  } finally {
    sandbox.kill('SIGKILL');
  }
});

test('raised when runsc returned if no sandbox process was seen; a failed start raises nothing', async () => {
  const files = cgroup('late');
  await withHeadroom(files, 416 << 20, async () => undefined);
  assert.equal(readFileSync(files.limit, 'utf8'), String(416 << 20));
  const failed = cgroup('failed');
  await assert.rejects(withHeadroom(failed, 416 << 20, async () => Promise.reject(new Error('runsc restore failed'))), /runsc restore failed/);
  assert.equal(readFileSync(failed.limit, 'utf8'), String(256 << 20));
});

test('a limit that cannot be written is RUNTIME_ERROR', async () => {
  const files = { limit: join(dir, 'missing', 'memory.limit_in_bytes'), procs: join(dir, 'missing', 'cgroup.procs') };
  await assert.rejects(withHeadroom(files, 1 << 30, async () => undefined), (err: unknown) => err instanceof RamifyError && err.code === 'RUNTIME_ERROR' && /headroom/.test(err.message));
});

test('a checkpoint runs with the cgroup limit doubled; a failed one puts the limit back', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rmf-ckroom-'));
  try {
    const files = { limit: join(dir, 'memory.limit_in_bytes'), procs: join(dir, 'cgroup.procs') };
    writeFileSync(files.limit, `${704 << 20}\n`);
    const seen = await withCheckpointRoom(files, async () => readFileSync(files.limit, 'utf8'));
    assert.equal(seen, String(1408 << 20));
    writeFileSync(files.limit, `${704 << 20}\n`);
    await assert.rejects(
      withCheckpointRoom(files, async () => {
        assert.equal(readFileSync(files.limit, 'utf8'), String(1408 << 20));
        throw new RamifyError('RUNTIME_ERROR', 'runsc checkpoint failed');
      }),
      /runsc checkpoint failed/,
    );
    assert.equal(readFileSync(files.limit, 'utf8'), String(704 << 20));
    // No limit (v1's 2^63 - 4096 or v2's `max`): left alone.
    for (const none of ['9223372036854771712', 'max']) {
      writeFileSync(files.limit, none);
      assert.equal(await withCheckpointRoom(files, async () => readFileSync(files.limit, 'utf8')), none);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
