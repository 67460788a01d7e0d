/**
 * Per-sandbox resources of the microVM runtime against real QEMU (TCG here), the real agent and real
 * network namespaces and cgroups (prefix `rvr`): `memoryMB` through the virtio balloon (seen by the
 * guest, different per restore of one image, enforced inside the guest, kept across a checkpoint of a
 * restored VM), the image RAM file untouched by a fork's balloon (discard guard), `cpuCount` as a CFS
 * quota in `/ramify/<id>`, removed on kill, and the clear error for more memory than the image has.
 * Needs `RAMIFY_TEST_ROOTFS` with the agent bundle (scripts/run-tests.mjs sets it), root, and
 * qemu-system-x86, qemu-utils, busybox-static, cpio, e2fsprogs.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AGENT_SERVE_VIRTIO_ARGV, connectAgent } from '@ramify/agent';
import { NamespaceNetwork } from '@ramify/network';
import type { AgentSession } from '@ramify/contracts';
import type { RuntimeSandboxSpec } from '@ramify/core';
import { detectAcceleration } from './acceleration.js';
import { prepareGuestKernel } from './guest-kernel.js';
import { IMAGE_FILES } from './image-files.js';
import { MicrovmRuntime } from './microvm-runtime.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const hasAgent = rootfs ? existsSync(join(rootfs, 'opt/ramify/agent.mjs')) : false;
const skip = hasAgent ? false : 'RAMIFY_TEST_ROOTFS (with the agent bundle) is not set: scripts/run-tests.mjs sets it';
// Kept out of npm test's 30 minutes; the microVM conformance's every-run groups cover boot, memory and restore.
const fullOnly = process.env.RAMIFY_TEST_FULL !== '1' ? 'long under TCG: runs in npm run test:full (RAMIFY_TEST_FULL=1)' : false;
const cacheDir = join(process.env.RAMIFY_CACHE_DIR ?? '/var/cache/ramify', 'microvm');
const net = new NamespaceNetwork({ prefix: 'rvr' });
/** Small image RAM keeps the template boot's balloon work short under TCG. */
const IMAGE_MB = 1024;
let work = '';
let runtime: MicrovmRuntime;
const created = new Set<string>();

before(async () => {
  if (skip) return;
  work = await mkdtemp(join(tmpdir(), 'rvr-'));
  await writeFile(join(work, 'resolv.conf'), 'nameserver 10.254.0.53\n');
  const kernel = await prepareGuestKernel({ cacheDir });
  const acceleration = await detectAcceleration({ kernel, cacheDir: null, forceTcg: true });
  runtime = await MicrovmRuntime.open({ workDir: join(work, 'vm'), kernel, acceleration, resolvConfPath: join(work, 'resolv.conf'), diskSizeMB: 1024, imageMemoryMB: IMAGE_MB, imageCpuCount: 2 });
});
after(async () => {
  if (skip) return;
  for (const id of [...sessions.keys()]) await closeSession(id).catch(() => undefined);
  for (const id of created) await runtime.kill(id).catch(() => undefined);
  await net.destroyAll();
  await rm(work, { recursive: true, force: true });
});

async function spec(id: string, slot: number, memoryMB: number, cpuCount = 1): Promise<RuntimeSandboxSpec> {
  created.add(id);
  return { sandboxId: id, rootfsDir: rootfs!, hostname: id, resources: { cpuCount, memoryMB, diskSizeMB: null }, network: await net.attach(id, slot) };
}

const sessions = new Map<string, AgentSession>();

/** The open agent session of a sandbox (one per VM: a new host connection costs seconds under TCG). */
async function session(id: string): Promise<AgentSession> {
  let open = sessions.get(id);
  for (let attempt = 1; !open; attempt++) {
    try {
      open = await connectAgent(await runtime.openAgentChannel(id));
    } catch (err) {
      // A booting or busy TCG guest may miss the first pings.
      if ((err as { code?: string }).code !== 'AGENT_UNREACHABLE' || attempt >= 4) throw err;
    }
  }
  sessions.set(id, open);
  return open;
}

/** Close a sandbox's agent session (before its checkpoint or kill). */
async function closeSession(id: string): Promise<void> {
  await sessions.get(id)?.close();
  sessions.delete(id);
}

/** Run `cmd` in the guest through the real agent: exit code and output. */
async function sh(id: string, cmd: string): Promise<{ code: number | null; out: string }> {
  const agent = await session(id);
  let out = '';
  const collect = (d: Uint8Array): void => void (out += Buffer.from(d).toString('utf8'));
  const { pid } = await agent.start({ cmd }, { onStdout: collect, onStderr: collect });
  const exit = await agent.wait(pid);
  return { code: exit.exitCode, out: out.trim() };
}

/** The guest's MemTotal, MiB. */
async function memTotalMB(id: string): Promise<number> {
  const { out } = await sh(id, 'cat /proc/meminfo');
  return Math.round(Number(/^MemTotal:\s+(\d+) kB/m.exec(out)?.[1]) / 1024);
}

/** Poll the guest's MemTotal until `ok` holds (the balloon moves asynchronously when it deflates), at most 60 s. */
async function memTotalUntil(id: string, ok: (mb: number) => boolean): Promise<number> {
  let mb = await memTotalMB(id);
  for (let i = 0; i < 60 && !ok(mb); i++) {
    await sleep(1000);
    mb = await memTotalMB(id);
  }
  return mb;
}

async function pidOf(id: string): Promise<number> {
  return (JSON.parse(await readFile(join(work, 'vm/run', id, 'instance.json'), 'utf8')) as { pid: number }).pid;
}

const allocated = async (path: string): Promise<number> => (await stat(path)).blocks * 512;

test('memoryMB and cpuCount per sandbox: balloon in the guest, CPU quota on QEMU, per restore of one image', { skip: skip || fullOnly, timeout: 900_000 }, async (t) => {
  await runtime.boot(await spec('rvr-src', 1, 512), ['/usr/bin/tini', '-s', '--', '/usr/bin/node', ...AGENT_SERVE_VIRTIO_ARGV.slice(1)]);
  const bootTotal = await memTotalMB('rvr-src');
  assert.ok(bootTotal <= 512 && bootTotal > 400, `a booted 512 MiB sandbox on a ${IMAGE_MB} MiB machine sees MemTotal ${bootTotal} MiB`);
  assert.equal((await sh('rvr-src', 'nproc')).out, '2', 'the guest sees the image vCPUs');

  const image = join(work, 'image');
  await closeSession('rvr-src');
  await runtime.checkpoint('rvr-src', image);
  assert.equal(existsSync(runtime.cpuQuotas.dirOf('rvr-src') ?? '/nonexistent'), false, 'the checkpoint removed the quota cgroup');
  const imageRam = join(image, IMAGE_FILES.ram);
  const imageRamBytes = await allocated(imageRam);

  await runtime.restore(await spec('rvr-small', 2, 384), image);
  await runtime.restore(await spec('rvr-big', 3, 896, 2), image);
  const small = await memTotalMB('rvr-small');
  const big = await memTotalUntil('rvr-big', (mb) => mb > 768);
  t.diagnostic(`MemTotal: boot 512 → ${bootTotal} MiB, restore 384 → ${small} MiB, restore 896 → ${big} MiB`);
  assert.ok(small <= 384 && small > 280, `restore at 384 MiB sees ${small} MiB`);
  assert.ok(big <= 896 && big > 768, `restore at 896 MiB sees ${big} MiB`);

  await t.test('a fork giving memory to its balloon leaves the shared image RAM file alone', async () => {
    assert.equal(await allocated(imageRam), imageRamBytes);
    assert.equal((await sh('rvr-big', 'echo alive')).out, 'alive', 'the sibling fork is fine');
  });

  await t.test('allocating beyond the limit fails inside the guest, the VM lives on', async () => {
    const r = await sh('rvr-small', `python3 -c "b = bytearray(600 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096]); print('allocated')"`);
    assert.notEqual(r.code, 0, `a 600 MiB allocation in a 384 MiB sandbox must fail: ${r.out}`);
    assert.equal((await runtime.status('rvr-small')).state, 'running');
    assert.equal((await sh('rvr-small', 'echo alive')).out, 'alive');
    const rss = Number(/^Rss:\s+(\d+)/m.exec(await readFile(`/proc/${await pidOf('rvr-small')}/smaps_rollup`, 'utf8'))?.[1]) / 1024;
    t.diagnostic(`QEMU of the 384 MiB sandbox after the attempt: RSS ${rss.toFixed(0)} MiB`);
    assert.ok(rss < 384 + 256, `QEMU did not grow past the limit (RSS ${rss.toFixed(0)} MiB)`);
  });

  await t.test('each sandbox has its CPU quota in /ramify/<id>, holding its QEMU', async () => {
    for (const [id, cores] of [['rvr-small', 1], ['rvr-big', 2]] as const) {
      const dir = runtime.cpuQuotas.dirOf(id);
      if (!dir) return t.skip('this host has no cpu cgroup controller');
      assert.match(dir, new RegExp(`/ramify/${id}$`));
      assert.deepEqual(await runtime.cpuQuotas.read(id), { quotaUs: cores * 100_000, periodUs: 100_000 });
      const procs = (await readFile(join(dir, 'cgroup.procs'), 'utf8')).split('\n').filter(Boolean).map(Number);
      assert.ok(procs.includes(await pidOf(id)), `${id}'s QEMU is in ${dir}`);
    }
  });

  await t.test('the balloon is part of a checkpoint of a restored VM; the next restore sets its own', async () => {
    const image2 = join(work, 'image2');
    await closeSession('rvr-small');
    await runtime.checkpoint('rvr-small', image2);
    await runtime.restore(await spec('rvr-again', 4, 640), image2);
    const again = await memTotalUntil('rvr-again', (mb) => mb > 512);
    assert.ok(again <= 640 && again > 512, `restore at 640 MiB of a 384 MiB snapshot sees ${again} MiB`);
  });

  await t.test('kill removes the quota cgroup', async () => {
    const dir = runtime.cpuQuotas.dirOf('rvr-big');
    await closeSession('rvr-big');
    await runtime.kill('rvr-big');
    if (dir) assert.equal(existsSync(dir), false);
  });

  await t.test('more memory than the image has is refused clearly, leaving nothing behind', async () => {
    await assert.rejects(runtime.restore(await spec('rvr-huge', 5, IMAGE_MB * 2), image), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'VALIDATION_FAILED');
      assert.match(e.message, new RegExp(`${IMAGE_MB} MiB of RAM.*the most a sandbox restored from it can have.*--microvm-memory.*build the template again`));
      return true;
    });
    assert.equal((await runtime.status('rvr-huge')).state, 'missing');
    const dir = runtime.cpuQuotas.dirOf('rvr-huge');
    if (dir) assert.equal(existsSync(dir), false);
  });
});
