/**
 * The Runtime conformance suite (`@ramify/core/testsuite`) against the microVM runtime: real QEMU (TCG
 * here, so slow: `npm run test:full` only), a real guest kernel, real network namespaces (prefix `rcv`,
 * slots 1-7), the base template's root filesystem with the real agent on its virtio-serial port. Needs
 * `RAMIFY_TEST_ROOTFS` (scripts/run-tests.mjs sets it) and qemu-system-x86, qemu-utils, busybox-static,
 * cpio, e2fsprogs.
 */
import { mkdtemp, readdir, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe } from 'node:test';
import { connectAgent } from '@ramify/agent';
import { runtimeConformance } from '@ramify/core/testsuite';
import { NamespaceNetwork } from '@ramify/network';
import { templateInitArgv } from '@ramify/template-builder';
import { detectAcceleration } from './acceleration.js';
import { prepareGuestKernel } from './guest-kernel.js';
import { MicrovmRuntime } from './microvm-runtime.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const CGROUP = '/ramify-rcv';
const skip = !rootfs
  ? 'RAMIFY_TEST_ROOTFS is not set (scripts/run-tests.mjs sets it after building the base template)'
  : process.env.RAMIFY_TEST_FULL !== '1'
    ? 'long under TCG (minutes): runs in npm run test:full (RAMIFY_TEST_FULL=1)'
    : null;

if (skip !== null) {
  describe('Runtime conformance: microVM', { skip }, () => undefined);
} else {
  const work = await mkdtemp(join(tmpdir(), 'rcv-'));
  await writeFile(join(work, 'resolv.conf'), 'nameserver 10.254.0.53\n');
  const cacheDir = join(process.env.RAMIFY_CACHE_DIR ?? '/var/cache/ramify', 'microvm');
  const kernel = await prepareGuestKernel({ cacheDir });
  const acceleration = await detectAcceleration({ kernel, cacheDir: null, forceTcg: true });
  const runtime = await MicrovmRuntime.open({ workDir: join(work, 'vm'), kernel, acceleration, resolvConfPath: join(work, 'resolv.conf'), diskSizeMB: 1024, imageMemoryMB: 1024, cgroupParent: CGROUP });
  const network = new NamespaceNetwork({ prefix: 'rcv' });
  after(async () => {
    await network.destroyAll();
    for (const c of await readdir('/sys/fs/cgroup').catch(() => [] as string[])) await rmdir(`/sys/fs/cgroup/${c}${CGROUP}`).catch(() => undefined);
    await rm(work, { recursive: true, force: true });
  });
  runtimeConformance({
    name: `microVM (${runtime.summary ?? 'QEMU'})`,
    runtime,
    rootfsDir: rootfs!,
    initArgv: templateInitArgv(runtime),
    network,
    connectAgent: (channel, opts) => connectAgent(channel, { pingTimeoutMs: opts?.pingTimeoutMs }),
    idPrefix: 'rcv',
    firstSlot: 1,
    resources: { cpuCount: 1, memoryMB: 384, diskSizeMB: null },
    workDir: work,
    agentTimeoutMs: 120_000,
    caseTimeoutMs: 600_000,
  });
}
