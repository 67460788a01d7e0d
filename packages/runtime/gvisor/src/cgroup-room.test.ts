/**
 * The room a sandbox's cgroup gets while runsc works, on synthetic cgroup directories (cgroup v1 and v2
 * layouts): at a start, the memory limit raised and the CPU quota lifted once a process carrying
 * `--total-memory` (runsc's sandbox process) is in the cgroup, the quota back when runsc returns or fails;
 * at a checkpoint, memory doubled and CPU lifted, both put back when it fails.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { RamifyError } from '@ramify/contracts';
import { sandboxCgroup, withCheckpointRoom, withStartRoom, type SandboxCgroup } from './cgroup-room.js';

const dir = mkdtempSync(join(tmpdir(), 'ramify-cgroup-room-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const MiB = 1024 * 1024;
const limits = { limitBytes: 416 * MiB, quotaUs: 100_000, periodUs: 100_000 };

/** A synthetic cgroup `name` with a 256 MiB limit and a 1-core quota, in the v1 or v2 layout. */
function cgroup(name: string, v2 = false): SandboxCgroup {
  const root = join(dir, name);
  if (!v2) {
    mkdirSync(join(root, 'memory', 'sbx'), { recursive: true });
    mkdirSync(join(root, 'cpu', 'sbx'), { recursive: true });
  } else mkdirSync(join(root, 'sbx'), { recursive: true });
  const files = sandboxCgroup('/sbx', root);
  writeFileSync(files.memory.limit, String(256 * MiB));
  writeFileSync(files.cpu.quota, v2 ? '100000 100000' : '100000');
  writeFileSync(files.memory.procs, '');
  writeFileSync(files.cpu.procs, '');
  return files;
}

const read = (path: string): string => readFileSync(path, 'utf8');
const unlimited = (files: SandboxCgroup): string => (files.cpu.v2 ? 'max 100000' : '-1');

/** Stands in for `runsc-sandbox ... --total-memory N`: only its command line matters. */
const sandboxProcess = (): ChildProcess => spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)', '--', '--total-memory', String(256 * MiB)], { stdio: 'ignore' });

/** Wait (bounded) until `path` holds `text`. */
async function until(path: string, text: string): Promise<void> {
  for (let i = 0; i < 400 && read(path) !== text; i++) await sleep(5);
}

for (const v2 of [false, true]) {
  test(`cgroup ${v2 ? 'v2' : 'v1'}: a start gets memory and CPU once the sandbox process is in, the quota back when runsc returned`, async () => {
    const files = cgroup(`start-${v2}`, v2);
    const sandbox = sandboxProcess();
    try {
      const seenByRunsc = { memory: '', cpu: '' };
      await withStartRoom(files, limits, async () => {
        seenByRunsc.memory = read(files.memory.limit);
        seenByRunsc.cpu = read(files.cpu.quota);
        writeFileSync(files.memory.procs, `${process.pid}\n${sandbox.pid}\n`);
        await until(files.memory.limit, String(416 * MiB));
        await until(files.cpu.quota, unlimited(files));
        assert.equal(read(files.memory.limit), String(416 * MiB), 'memory raised while runsc still runs');
        assert.equal(read(files.cpu.quota), unlimited(files), 'quota lifted while runsc still runs');
      });
      assert.deepEqual(seenByRunsc, { memory: String(256 * MiB), cpu: v2 ? '100000 100000' : '100000' }, 'runsc read the spec');
      assert.equal(read(files.memory.limit), String(416 * MiB), 'the headroom stays');
      assert.equal(read(files.cpu.quota), v2 ? '100000 100000' : '100000', 'the quota is back');
    } finally {
      sandbox.kill('SIGKILL');
    }
  });
}

test('no sandbox process seen: memory raised when runsc returned, the quota as runsc wrote it', async () => {
  const files = cgroup('late');
  writeFileSync(files.cpu.quota, '50000');
  await withStartRoom(files, limits, async () => sleep(30));
  assert.equal(read(files.memory.limit), String(416 * MiB));
  assert.equal(read(files.cpu.quota), '50000');
});

test('a failed start raises no memory and puts the quota back', async () => {
  const quiet = cgroup('failed-quiet');
  await assert.rejects(withStartRoom(quiet, limits, async () => Promise.reject(new Error('runsc restore failed'))), /runsc restore failed/);
  assert.equal(read(quiet.memory.limit), String(256 * MiB));
  const files = cgroup('failed');
  const sandbox = sandboxProcess();
  try {
    await assert.rejects(
      withStartRoom(files, { ...limits, quotaUs: 200_000 }, async () => {
        writeFileSync(files.memory.procs, `${sandbox.pid}\n`);
        await until(files.cpu.quota, '-1');
        throw new Error('runsc restore failed');
      }),
      /runsc restore failed/,
    );
    assert.equal(read(files.cpu.quota), '200000');
  } finally {
    sandbox.kill('SIGKILL');
  }
});

test('a memory limit that cannot be written is RUNTIME_ERROR', async () => {
  const files = sandboxCgroup('/missing', join(dir, 'nowhere'));
  await assert.rejects(withStartRoom(files, limits, async () => undefined), (err: unknown) => err instanceof RamifyError && err.code === 'RUNTIME_ERROR' && /headroom/.test(err.message));
});

for (const v2 of [false, true]) {
  test(`cgroup ${v2 ? 'v2' : 'v1'}: a checkpoint runs with memory doubled and CPU lifted; a failed one puts both back`, async () => {
    const files = cgroup(`checkpoint-${v2}`, v2);
    writeFileSync(files.memory.limit, `${704 * MiB}\n`);
    const seen = await withCheckpointRoom(files, async () => ({ memory: read(files.memory.limit), cpu: read(files.cpu.quota) }));
    assert.deepEqual(seen, { memory: String(1408 * MiB), cpu: unlimited(files) });
    writeFileSync(files.memory.limit, `${704 * MiB}\n`);
    writeFileSync(files.cpu.quota, v2 ? '200000 100000' : '200000');
    await assert.rejects(
      withCheckpointRoom(files, async () => {
        assert.equal(read(files.memory.limit), String(1408 * MiB));
        assert.equal(read(files.cpu.quota), unlimited(files));
        throw new RamifyError('RUNTIME_ERROR', 'runsc checkpoint failed');
      }),
      /runsc checkpoint failed/,
    );
    assert.equal(read(files.memory.limit), String(704 * MiB));
    assert.equal(read(files.cpu.quota), v2 ? '200000 100000' : '200000');
  });
}

test('a checkpoint leaves no limit alone (v1 ~2^63 and -1, v2 max)', async () => {
  for (const v2 of [false, true]) {
    const files = cgroup(`none-${v2}`, v2);
    const none = v2 ? 'max' : '9223372036854771712';
    writeFileSync(files.memory.limit, none);
    writeFileSync(files.cpu.quota, unlimited(files));
    assert.deepEqual(await withCheckpointRoom(files, async () => [read(files.memory.limit), read(files.cpu.quota)]), [none, unlimited(files)]);
  }
});
