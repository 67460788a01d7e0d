/**
 * The Runtime conformance suite (`@ramify/core/testsuite`) against the gVisor runtime: real runsc, real
 * network namespaces (prefix `rcg`, slots 1-7), the base template's root filesystem with the real agent
 * as init, and the agent channel as the daemon has it: TCP through the agent dialer and its firewall table
 * (the `runsc exec` bridge only at boot; any other fallback fails the suite). Needs `RAMIFY_TEST_ROOTFS`
 * (scripts/run-tests.mjs sets it).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe } from 'node:test';
import { AGENT_TCP_PORT, connectAgent } from '@ramify/agent';
import { runtimeConformance } from '@ramify/core/testsuite';
import { DEFAULT_AGENT_DIALER_UID, IngressDialer, NamespaceNetwork, installAgentFirewall, slotRange } from '@ramify/network';
import { templateInitArgv } from '@ramify/template-builder';
import { GvisorRuntime } from './gvisor-runtime.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const CGROUP = '/ramify-rcg';

if (!rootfs) {
  describe('Runtime conformance: gVisor', { skip: 'RAMIFY_TEST_ROOTFS is not set (scripts/run-tests.mjs sets it after building the base template)' }, () => undefined);
} else {
  const work = await mkdtemp(join(tmpdir(), 'rcg-'));
  await writeFile(join(work, 'resolv.conf'), 'nameserver 10.254.0.1\n');
  const network = new NamespaceNetwork({ prefix: 'rcg' });
  await installAgentFirewall({ prefix: 'rcg', slotRange: slotRange(network.layout), agentPort: AGENT_TCP_PORT, dialerUid: DEFAULT_AGENT_DIALER_UID });
  const dialer = new IngressDialer({ uid: DEFAULT_AGENT_DIALER_UID, connectTimeoutMs: 3000 });
  const fallbacks: string[] = [];
  const runtime = await GvisorRuntime.open({
    workDir: join(work, 'runsc'), resolvConfPath: join(work, 'resolv.conf'), cgroupParent: CGROUP,
    dialAgent: (host, port) => dialer.dial(host, port),
    onAgentChannelFallback: (id, reason) => fallbacks.push(`${id}: ${reason}`),
  });
  after(async () => {
    dialer.close();
    await runtime.settle();
    await network.destroyAll();
    for (const c of await readdir('/sys/fs/cgroup').catch(() => [] as string[])) await rmdir(`/sys/fs/cgroup/${c}${CGROUP}`).catch(() => undefined);
    await rm(work, { recursive: true, force: true });
    assert.deepEqual(fallbacks.filter((f) => !f.endsWith('the agent holds no key yet')), [], 'every channel after a restore was TCP');
  });
  runtimeConformance({
    name: 'gVisor (runsc)',
    runtime,
    rootfsDir: rootfs,
    initArgv: templateInitArgv(runtime),
    network,
    connectAgent: (channel, opts) => connectAgent(channel, { pingTimeoutMs: opts?.pingTimeoutMs }),
    idPrefix: 'rcg',
    firstSlot: 1,
    resources: { cpuCount: 1, memoryMB: 512, diskSizeMB: null },
    workDir: work,
    agentTimeoutMs: 20_000,
    caseTimeoutMs: 60_000,
  });
}
