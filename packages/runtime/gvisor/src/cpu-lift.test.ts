/**
 * The CPU quota while runsc starts a sandbox, on a synthetic cgroup directory: lifted once a process
 * carrying `--total-memory` (runsc's sandbox process) is in the cgroup, back to the sandbox's quota when
 * runsc returns or fails; left alone when no sandbox process showed up.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cgroupCpuFiles, withCpuLifted, type CgroupCpuFiles } from './cpu-lift.js';

const dir = mkdtempSync(join(tmpdir(), 'ramify-cpu-lift-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('finds the CPU controller of cgroup v1 and v2 layouts', () => {
  const v1 = join(dir, 'v1');
  mkdirSync(join(v1, 'cpu'), { recursive: true });
  assert.deepEqual(cgroupCpuFiles('/ramify/sbx.1', v1), { quota: `${v1}/cpu/ramify/sbx.1/cpu.cfs_quota_us`, v2: false, procs: `${v1}/cpu/ramify/sbx.1/cgroup.procs` });
  const v2 = join(dir, 'v2');
  mkdirSync(v2, { recursive: true });
  assert.deepEqual(cgroupCpuFiles('/ramify/sbx.1', v2), { quota: `${v2}/ramify/sbx.1/cpu.max`, v2: true, procs: `${v2}/ramify/sbx.1/cgroup.procs` });
});

function cgroup(name: string, v2 = false): CgroupCpuFiles {
  const d = join(dir, name);
  mkdirSync(d, { recursive: true });
  const files = { quota: join(d, v2 ? 'cpu.max' : 'cpu.cfs_quota_us'), v2, procs: join(d, 'cgroup.procs') };
  writeFileSync(files.quota, v2 ? '100000 100000' : '100000');
  writeFileSync(files.procs, '');
  return files;
}

/** Stands in for `runsc-sandbox ... --total-memory N`: only its command line matters. */
const sandboxProcess = (): ChildProcess => spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)', '--', '--total-memory', '1'], { stdio: 'ignore' });

for (const v2 of [false, true]) {
  test(`cgroup ${v2 ? 'v2' : 'v1'}: lifted while the sandbox process starts, the sandbox's quota again once runsc returned`, async () => {
    const files = cgroup(`lift-${v2}`, v2);
    const sandbox = sandboxProcess();
    try {
      let seenByRunsc = '';
      await withCpuLifted(files, 100_000, 100_000, async () => {
        seenByRunsc = readFileSync(files.quota, 'utf8');
        writeFileSync(files.procs, `${sandbox.pid}\n`);
        const unlimited = v2 ? 'max 100000' : '-1';
        for (let i = 0; i < 400 && readFileSync(files.quota, 'utf8') !== unlimited; i++) await sleep(5);
        assert.equal(readFileSync(files.quota, 'utf8'), unlimited, 'lifted while runsc still runs');
      });
      assert.equal(seenByRunsc, v2 ? '100000 100000' : '100000', 'runsc read the quota of the spec');
      assert.equal(readFileSync(files.quota, 'utf8'), v2 ? '100000 100000' : '100000', 'the quota is back');
    } finally {
      sandbox.kill('SIGKILL');
    }
  });
}

test('a failed start puts the quota back too; without a sandbox process nothing is written', async () => {
  const files = cgroup('fails');
  const sandbox = sandboxProcess();
  try {
    await assert.rejects(withCpuLifted(files, 200_000, 100_000, async () => {
      writeFileSync(files.procs, `${sandbox.pid}\n`);
      for (let i = 0; i < 400 && readFileSync(files.quota, 'utf8') !== '-1'; i++) await sleep(5);
      throw new Error('runsc failed');
    }), /runsc failed/);
    assert.equal(readFileSync(files.quota, 'utf8'), '200000');
  } finally {
    sandbox.kill('SIGKILL');
  }
  const quiet = cgroup('quiet');
  writeFileSync(quiet.quota, '50000');
  await withCpuLifted(quiet, 100_000, 100_000, async () => sleep(30));
  assert.equal(readFileSync(quiet.quota, 'utf8'), '50000', 'left as runsc wrote it');
});
