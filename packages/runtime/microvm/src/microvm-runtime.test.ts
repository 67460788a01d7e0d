/**
 * The microVM runtime on its own, against real QEMU (TCG here), a real guest kernel and real network
 * namespaces (prefix `rvm`): kernel preparation, boot, the agent port, the guest's own kernel and
 * network, checkpoint, restore, three forks of one image, a checkpoint of a fork (RAM materialized),
 * settling a checkpoint a dead daemon left half done, a fork point that keeps the VM running, kill. A line server stands in for the agent.
 * Needs `RAMIFY_TEST_ROOTFS` (scripts/run-tests.mjs sets it) and qemu-system-x86, qemu-utils,
 * busybox-static, cpio, e2fsprogs.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENT_SERVE_VIRTIO_ARGV, connectAgent } from '@ramify/agent';
import { NamespaceNetwork, slotAddresses } from '@ramify/network';
import type { RuntimeSandboxSpec } from '@ramify/core';
import { detectAcceleration } from './acceleration.js';
import { prepareGuestKernel, type GuestKernel } from './guest-kernel.js';
import { BOOT_MARKER } from './guest-init.js';
import { IMAGE_FILES } from './image-files.js';
import { MicrovmRuntime } from './microvm-runtime.js';
import { QmpClient } from './qmp.js';
import { GUEST_TEST_INIT, TEST_INIT_MARKER } from './testing/guest-test-init.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = rootfs ? false : 'RAMIFY_TEST_ROOTFS is not set (scripts/run-tests.mjs sets it after building the base template)';
const cacheDir = join(process.env.RAMIFY_CACHE_DIR ?? '/var/cache/ramify', 'microvm');
const net = new NamespaceNetwork({ prefix: 'rvm' });
let work = '';
let kernel: GuestKernel;
let runtime: MicrovmRuntime;
let hostServer: Server | null = null;
const created = new Set<string>();

before(async () => {
  if (skip) return;
  work = await mkdtemp(join(tmpdir(), 'rvm-'));
  await writeFile(join(work, 'resolv.conf'), 'nameserver 10.254.0.53\n');
  kernel = await prepareGuestKernel({ cacheDir });
  const acceleration = await detectAcceleration({ kernel, cacheDir: null, forceTcg: true });
  runtime = await MicrovmRuntime.open({ workDir: join(work, 'vm'), kernel, acceleration, resolvConfPath: join(work, 'resolv.conf'), diskSizeMB: 1024, imageMemoryMB: 1024 });
});
after(async () => {
  if (skip) return;
  for (const id of created) await runtime.kill(id).catch(() => undefined);
  hostServer?.close();
  await net.destroyAll();
  await rm(work, { recursive: true, force: true });
});

async function spec(id: string, slot: number): Promise<RuntimeSandboxSpec> {
  created.add(id);
  return { sandboxId: id, rootfsDir: rootfs!, hostname: id, resources: { cpuCount: 1, memoryMB: 384, diskSizeMB: null }, network: await net.attach(id, slot) };
}

/** A line client on a sandbox's agent channel. */
class Lines {
  private buffer = '';
  private waiters: Array<(line: string) => void> = [];
  constructor(readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      this.buffer += d;
      let i: number;
      while ((i = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, i);
        this.buffer = this.buffer.slice(i + 1);
        this.waiters.shift()?.(line);
      }
    });
    socket.resume(); // openVirtioChannel hands the socket over paused
  }
  ask(line: string, timeoutMs = 30_000): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to '${line}'`)), timeoutMs);
      this.waiters.push((answer) => {
        clearTimeout(timer);
        resolve(answer);
      });
      this.socket.write(line + '\n');
    });
  }
  close(): void {
    this.socket.destroy();
  }
}

async function channel(id: string): Promise<Lines> {
  const lines = new Lines((await runtime.openAgentChannel(id)) as Socket);
  await lines.ask('hostname', 120_000);
  return lines;
}

async function consoleOf(id: string): Promise<string> {
  return readFile(join(work, 'vm/run', id, 'console.log'), 'utf8').catch(() => '');
}

test('prepareGuestKernel is idempotent and yields a Debian generic kernel with its initramfs', { skip }, async () => {
  const again = await prepareGuestKernel({ cacheDir });
  assert.deepEqual(again, kernel);
  assert.match(kernel.version, /^\d+\.\d+\.\d+-\d+-amd64$/);
  assert.ok(existsSync(kernel.kernelPath) && existsSync(kernel.initrdPath));
  assert.ok(kernel.modules.includes('virtio_blk.ko') && kernel.modules.includes('ext4.ko'));
  assert.ok(kernel.modules.indexOf('virtio.ko') < kernel.modules.indexOf('virtio_pci.ko'), 'dependencies load first');
});

// ~37 s under TCG with the two cases after it that use its VMs: a full run's (RAMIFY_TEST_FULL=1). Every run
// still boots a microVM with its own kernel and network, takes a fork point and restores it through the
// daemon: the microVM conformance groups `bad input` and `fork point` (packages/conformance/src/microvm.test.ts).
const fullOnly = process.env.RAMIFY_TEST_FULL === '1' ? false : 'long under TCG: runs in npm run test:full (RAMIFY_TEST_FULL=1)';

test('boot, own kernel and network, checkpoint, restore into three forks, checkpoint of a fork', { skip: skip || fullOnly, timeout: 600_000 }, async (t) => {
  await runtime.boot(await spec('rvm-src', 1), ['/usr/bin/node', '-e', GUEST_TEST_INIT]);
  assert.equal((await runtime.status('rvm-src')).state, 'running');
  const src = await channel('rvm-src');
  const consoleText = await consoleOf('rvm-src');
  assert.ok(consoleText.includes(BOOT_MARKER) && consoleText.includes(TEST_INIT_MARKER), `boot markers on the console:\n${consoleText}`);

  await t.test('the guest runs the Debian guest kernel, not the host kernel', async () => {
    const [rel, version] = (await src.ask('uname')).split('|');
    assert.equal(rel, kernel.version);
    assert.notEqual(rel, release());
    assert.match(version!, /Debian/);
  });

  await t.test('eth0 has the namespace guest address and reaches the host through the router', async () => {
    assert.equal(await src.ask('ip'), '10.254.0.2/30');
    hostServer = createServer((s) => s.once('data', () => s.end('pong\n')));
    await new Promise<void>((r) => hostServer!.listen(0, '0.0.0.0', r));
    const port = (hostServer.address() as { port: number }).port;
    const { hostAddress } = slotAddresses(net.layout, 1);
    assert.equal(await src.ask(`tcp ${hostAddress} ${port}`), 'pong');
  });

  assert.equal(await src.ask('get'), '1');
  assert.equal(await src.ask('touch /root/parent'), 'ok');
  src.close();

  const image = join(work, 'image1');
  const { sizeBytes } = await runtime.checkpoint('rvm-src', image);
  assert.ok(sizeBytes > 0);
  assert.deepEqual((await readdir(image)).sort(), Object.values(IMAGE_FILES).sort());
  assert.equal((await runtime.status('rvm-src')).state, 'missing', 'checkpoint stops the VM and deletes its state');

  const forks = ['rvm-f1', 'rvm-f2', 'rvm-f3'];
  for (const [i, id] of forks.entries()) await runtime.restore(await spec(id, i + 2), image);
  const chans = await Promise.all(forks.map((id) => channel(id)));
  for (const ch of chans) assert.equal(await ch.ask('get'), '2', 'each fork continues the counter from the image');
  for (const ch of chans) assert.equal(await ch.ask('read /root/parent'), 'x', 'files of the image are there');
  assert.equal(await chans[0]!.ask('touch /root/only-f1'), 'ok');
  assert.equal(await chans[1]!.ask('read /root/only-f1'), 'none', 'a write in one fork is absent in another');
  const rands = await Promise.all(chans.map((ch) => ch.ask('rand')));
  assert.equal(new Set(rands).size, 3, `forks draw different random bytes (vmgenid reseed): ${rands.join(' ')}`);
  assert.equal(await chans[2]!.ask('ip'), '10.254.0.2/30');
  t.diagnostic(`per-fork memory: ${(await Promise.all(forks.map((id) => forkMemory(id)))).join('; ')}`);
  assert.deepEqual((await runtime.list()).filter((id) => id.startsWith('rvm-')), forks);

  // A fork's RAM is a private mapping: its checkpoint materializes the RAM into a new image.
  assert.equal(await chans[0]!.ask('get'), '3');
  for (const ch of chans) ch.close();
  const image2 = join(work, 'image2');
  await runtime.checkpoint('rvm-f1', image2);
  await runtime.restore(await spec('rvm-g1', 5), image2);
  const g1 = await channel('rvm-g1');
  assert.equal(await g1.ask('get'), '4', 'memory of the fork carried over');
  assert.equal(await g1.ask('read /root/only-f1'), 'x', 'files of the fork carried over');
  g1.close();
  // The next tests boot a VM under TCG: leave it the CPU, keep only the VMs later tests use.
  await runtime.kill('rvm-g1');

  await runtime.kill('rvm-f2');
  assert.equal((await runtime.status('rvm-f2')).state, 'missing');
  await runtime.kill('rvm-f2');
  const ns = net.names(3).sandboxNs;
  const links = spawnSync('ip', ['-n', ns, '-o', 'link', 'show'], { encoding: 'utf8' }).stdout;
  const qdiscs = spawnSync('tc', ['-n', ns, 'qdisc', 'show', 'dev', 'eth0'], { encoding: 'utf8' }).stdout;
  assert.ok(links.includes('eth0') && !links.includes('rvtap0') && !qdiscs.includes('ingress'), 'kill leaves a plain eth0 for the next sandbox of the slot');
});

test('settleInterrupted undoes a checkpoint a dead daemon left half done', { skip: skip || fullOnly, timeout: 300_000 }, async () => {
  // What a daemon killed mid-checkpoint leaves: the VM stopped over QMP, a checkpoint marker, a partial image.
  const id = 'rvm-f3';
  const imageDir = join(work, 'half-image');
  const instanceFile = join(work, 'vm/run', id, 'instance.json');
  const inst = JSON.parse(await readFile(instanceFile, 'utf8')) as Record<string, unknown>;
  const qmp = await QmpClient.connect(join(work, 'vm/run', id, 'qmp.sock'));
  await qmp.execute('stop');
  qmp.close();
  await rm(imageDir, { recursive: true, force: true });
  await writeFile(instanceFile, JSON.stringify({ ...inst, checkpoint: { imageDir, phase: 'migrating' } }));
  await mkdir(imageDir);
  await writeFile(join(imageDir, 'state'), 'partial');

  await runtime.settleInterrupted(id);
  assert.equal(existsSync(imageDir), false, 'the partial image is gone');
  assert.equal((await runtime.status(id)).state, 'running');
  const ch = await channel(id);
  assert.equal(await ch.ask('get'), '3', 'the VM runs on from where it was stopped');
  ch.close();
});

test('a fork point keeps the VM running in the same QEMU process; the image restores at the point', { skip: skip || fullOnly, timeout: 300_000 }, async () => {
  const id = 'rvm-f3';
  const pidOf = async (sandboxId: string): Promise<number> => (JSON.parse(await readFile(join(work, 'vm/run', sandboxId, 'instance.json'), 'utf8')) as { pid: number }).pid;
  const pid = await pidOf(id);
  let ch = await channel(id);
  const before = Number(await ch.ask('get'));
  assert.equal(await ch.ask('touch /root/before-point'), 'ok');
  ch.close();
  const image = join(work, 'fork-point');
  const { sizeBytes } = await runtime.checkpointKeepRunning(id, image);
  assert.ok(sizeBytes > 0);
  assert.deepEqual((await readdir(image)).sort(), Object.values(IMAGE_FILES).sort());
  assert.equal((await runtime.status(id)).state, 'running');
  assert.equal(await pidOf(id), pid, 'the same QEMU process goes on');
  ch = await channel(id);
  assert.equal(Number(await ch.ask('get')), before + 1, 'the VM goes on with its memory');
  assert.equal(await ch.ask('touch /root/after-point'), 'ok');

  await runtime.restore(await spec('rvm-h1', 10), image);
  const child = await channel('rvm-h1');
  assert.equal(Number(await child.ask('get')), before + 1, 'the child starts from the fork point');
  assert.equal(await child.ask('read /root/before-point'), 'x');
  assert.equal(await child.ask('read /root/after-point'), 'none', 'what the VM wrote after the point is not in the image');
  assert.equal(await child.ask('touch /root/child-only'), 'ok');
  assert.equal(await ch.ask('read /root/child-only'), 'none');
  child.close();
  ch.close();
  await runtime.kill('rvm-h1');
  await runtime.kill(id);
});

test('the real agent over virtio-serial: command, checkpoint, two restores with their own entropy', { skip: skip || (process.env.RAMIFY_TEST_FULL !== '1' ? 'long under TCG: runs in npm run test:full (RAMIFY_TEST_FULL=1)' : false), timeout: 300_000 }, async (t) => {
  const bundle = await readFile(join(rootfs!, 'opt/ramify/agent.mjs'), 'utf8').catch(() => '');
  if (!bundle.includes('--virtio-port')) return t.skip('the agent bundle in RAMIFY_TEST_ROOTFS has no virtio transport');
  const run = async (id: string, cmd: string): Promise<string> => {
    const channel = await runtime.openAgentChannel(id).catch(async (err: Error) => {
      // Say what the guest printed: a boot that never reached the agent shows why on its console.
      throw new Error(`${err.message}\n--- console of ${id} (last 4000 characters) ---\n${(await consoleOf(id)).slice(-4000)}`, { cause: err });
    });
    const session = await connectAgent(channel);
    try {
      let out = '';
      const { pid } = await session.start({ cmd }, { onStdout: (d) => (out += Buffer.from(d).toString('utf8')) });
      const exit = await session.wait(pid);
      assert.equal(exit.exitCode, 0, `${cmd} exited ${exit.exitCode}: ${out}`);
      return out.trim();
    } finally {
      await session.close();
    }
  };
  await runtime.boot(await spec('rvm-agent', 6), ['/usr/bin/tini', '-s', '--', '/usr/bin/node', ...AGENT_SERVE_VIRTIO_ARGV.slice(1)]);
  assert.equal(await run('rvm-agent', 'uname -r; echo kept > /root/kept'), kernel.version);
  const image = join(work, 'agent-image');
  await runtime.checkpoint('rvm-agent', image);
  await runtime.restore(await spec('rvm-agent-1', 7), image);
  await runtime.restore(await spec('rvm-agent-2', 8), image);
  const cmd = 'cat /root/kept; head -c 16 /dev/urandom | od -An -tx1 | tr -d " \\n"';
  const [a, b] = [await run('rvm-agent-1', cmd), await run('rvm-agent-2', cmd)];
  assert.equal(a.split('\n')[0], 'kept');
  assert.notEqual(a, b, 'the two restores draw different random bytes');
  // After a restore the agent may read a stale EOF of the image's host and go on past it (whether it does
  // depends on timing; host-link.test.ts checks deterministically that a later EOF is read from the
  // continued port). Either way a later host is served and the port never fails to go on.
  assert.equal(await run('rvm-agent-1', 'echo again'), 'again');
  assert.doesNotMatch(await consoleOf('rvm-agent-1'), /could not go on/);
});

test('restore rejects a directory that is not a microVM image', { skip }, async () => {
  const bogus = join(work, 'not-an-image');
  await rm(bogus, { recursive: true, force: true });
  await mkdir(bogus);
  await assert.rejects(runtime.restore(await spec('rvm-bad', 9), bogus), (e: Error & { code?: string }) => e.code === 'RUNTIME_ERROR' && /not a complete microVM image/.test(e.message));
});

test('open rejects RUNTIME_UNAVAILABLE naming the package when QEMU is missing', { skip }, async () => {
  await assert.rejects(
    MicrovmRuntime.open({ workDir: join(work, 'x'), kernel, acceleration: runtime.acceleration, resolvConfPath: join(work, 'resolv.conf'), qemuPath: '/nonexistent/qemu-system-x86_64' }),
    (e: Error & { code?: string }) => e.code === 'RUNTIME_UNAVAILABLE' && /qemu-system-x86/.test(e.message),
  );
});

/** `pss=… private=… (ram file private=…)` of a fork's QEMU, in MiB, from /proc/<pid>/smaps. */
async function forkMemory(id: string): Promise<string> {
  const pid = (JSON.parse(await readFile(join(work, 'vm/run', id, 'instance.json'), 'utf8')) as { pid: number }).pid;
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (key: string, text: string): number => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
  const smaps = await readFile(`/proc/${pid}/smaps`, 'utf8');
  const ramBlock = smaps.split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/).find((b) => b.split('\n')[0]!.endsWith(`/${IMAGE_FILES.ram}`)) ?? '';
  const mib = (n: number): string => (n / 1024).toFixed(1);
  return `${id} pss=${mib(kb('Pss', rollup))} private=${mib(kb('Private_Dirty', rollup) + kb('Private_Clean', rollup))} guest-ram-private=${mib(kb('Private_Dirty', ramBlock))} MiB`;
}
