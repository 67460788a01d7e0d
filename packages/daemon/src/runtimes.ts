/**
 * Opening the isolation runtimes this host has: gVisor (`runsc`) and the QEMU microVM runtime. Each one
 * that cannot be opened is reported with the reason and what to install, so a create that asks for it
 * fails with `RUNTIME_UNAVAILABLE` quoting that reason (core's `unavailableRuntimes`).
 *
 * The microVM runtime needs QEMU, the Debian guest kernel + initramfs (prepared once into
 * `<cacheDir>/microvm`, `apt-get download` on first use) and an acceleration verdict (KVM where a test
 * guest boots under it within a deadline, else TCG; cached per host), which is logged with its reason.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RuntimeName } from '@ramify/contracts';
import type { Logger, Runtime } from '@ramify/core';
import { GvisorRuntime, type AgentDialer, type RunscPlatform } from '@ramify/runtime-gvisor';
import { MicrovmRuntime, detectAcceleration, prepareGuestKernel, qemuVersion } from '@ramify/runtime-microvm';

export interface GvisorOptions {
  /** runsc binary; default `runsc` on PATH. */
  runscPath?: string;
  /** Default `ptrace` (`kvm` spins forever in nested VMs). */
  platform?: RunscPlatform;
  /** Parent cgroup of every sandbox; null disables limits. Default `/ramify`. */
  cgroupParent?: string | null;
  /** The agent channel's dialer (agent-channel.ts); absent: agents are reached through `runsc exec`. */
  dialAgent?: AgentDialer;
}

export interface MicrovmOptions {
  /** Default `qemu-system-x86_64` on PATH. */
  qemuPath?: string;
  /** Skip the KVM probe and use TCG (software emulation). */
  forceTcg?: boolean;
  /** Root disk size of a guest, MiB; default the runtime's (2048, sparse). */
  diskSizeMB?: number;
  /** RAM template images are booted with, MiB: the most `memoryMB` a microVM sandbox can have; default the runtime's (1024). */
  imageMemoryMB?: number;
}

export interface RuntimeOptions {
  dataDir: string;
  /** Shared cache root (`/var/cache/ramify`): the guest kernel lives in `<cacheDir>/microvm`. */
  cacheDir: string;
  logger: Logger;
  /** Which runtimes to open, the first being the default; default `['gvisor', 'microvm']` (those the host has). */
  names?: RuntimeName[];
  gvisor?: GvisorOptions;
  microvm?: MicrovmOptions;
  /** Nameservers sandboxes use (the policy resolver's service address when egress is enforced); null = the host's. */
  nameservers: string[] | null;
}

export interface OpenedRuntimes {
  /** Opened runtimes in the order asked for (the first is the default). */
  runtimes: Runtime[];
  /** Runtimes asked for that could not be opened, with the reason and what to install. */
  unavailable: Partial<Record<RuntimeName, string>>;
}

/**
 * Open every runtime in `options.names`, all at once (each one's start-up checks run in parallel); never
 * rejects (a runtime that fails to open is reported as unavailable).
 */
export async function openRuntimes(options: RuntimeOptions): Promise<OpenedRuntimes> {
  const names = options.names ?? ['gvisor', 'microvm'];
  const resolvConfPath = await writeResolvConf(options.dataDir, options.nameservers);
  const results = await Promise.allSettled(names.map((name) => (name === 'gvisor' ? openGvisor(options, resolvConfPath) : openMicrovm(options, resolvConfPath))));
  const opened: OpenedRuntimes = { runtimes: [], unavailable: {} };
  results.forEach((result, i) => {
    const name = names[i]!;
    if (result.status === 'fulfilled') {
      opened.runtimes.push(result.value);
      return;
    }
    const reason = result.reason instanceof Error ? result.reason.message : String(result.reason);
    opened.unavailable[name] = reason;
    options.logger.warn('runtime unavailable', { runtime: name, reason });
  });
  return opened;
}

async function openGvisor(options: RuntimeOptions, resolvConfPath: string): Promise<Runtime> {
  const gvisor = options.gvisor ?? {};
  const runtime = await GvisorRuntime.open({
    workDir: join(options.dataDir, 'runtime', 'gvisor'),
    resolvConfPath,
    ...(gvisor.runscPath !== undefined ? { runscPath: gvisor.runscPath } : {}),
    ...(gvisor.platform !== undefined ? { platform: gvisor.platform } : {}),
    ...(gvisor.cgroupParent !== undefined ? { cgroupParent: gvisor.cgroupParent } : {}),
    ...(gvisor.dialAgent ? { dialAgent: gvisor.dialAgent } : {}),
    // At boot the agent has no key yet (expected); any other fallback is worth a look.
    onAgentChannelFallback: (sandboxId, reason) =>
      (reason === 'the agent holds no key yet' ? options.logger.debug : options.logger.warn).call(options.logger, 'agent channel: over runsc exec instead of TCP', { sandboxId, reason }),
  });
  options.logger.info('runtime ready', { runtime: runtime.name, version: runtime.version });
  return runtime;
}

async function openMicrovm(options: RuntimeOptions, resolvConfPath: string): Promise<Runtime> {
  const microvm = options.microvm ?? {};
  const qemuPath = microvm.qemuPath ?? 'qemu-system-x86_64';
  const cacheDir = join(options.cacheDir, 'microvm');
  // Read once, before anything is fetched: rejects naming the apt package when QEMU is missing.
  const version = await qemuVersion(qemuPath);
  const kernel = await prepareGuestKernel({ cacheDir, onLine: (line) => options.logger.info('microvm: guest kernel', { line }) });
  const acceleration = await detectAcceleration({ kernel, cacheDir, qemuPath, qemuVersion: version, ...(microvm.forceTcg ? { forceTcg: true } : {}) });
  const runtime = await MicrovmRuntime.open({
    workDir: join(options.dataDir, 'runtime', 'microvm'),
    kernel,
    acceleration,
    resolvConfPath,
    qemuPath,
    qemuVersion: version,
    ...(microvm.diskSizeMB !== undefined ? { diskSizeMB: microvm.diskSizeMB } : {}),
    ...(microvm.imageMemoryMB !== undefined ? { imageMemoryMB: microvm.imageMemoryMB } : {}),
  });
  options.logger.info('runtime ready', {
    runtime: runtime.name,
    accelerator: acceleration.accelerator,
    why: acceleration.reason,
    guestKernel: kernel.version,
    qemu: runtime.qemuVersion,
  });
  return runtime;
}

/**
 * The resolv.conf sandboxes see: `nameservers` (the policy resolver's service address when egress is
 * enforced), else the host's non-loopback nameservers.
 */
async function writeResolvConf(dataDir: string, nameservers: string[] | null): Promise<string> {
  const path = join(dataDir, 'resolv.conf');
  await mkdir(dataDir, { recursive: true });
  if (nameservers) {
    await writeFile(path, `# written by ramify serve (policy resolver; port 53 is redirected on the host)\n${nameservers.map((ip) => `nameserver ${ip}`).join('\n')}\n`);
    return path;
  }
  const host = await readFile('/etc/resolv.conf', 'utf8').catch(() => '');
  const servers = host
    .split('\n')
    .map((line) => /^\s*nameserver\s+(\S+)/.exec(line)?.[1])
    .filter((ip): ip is string => ip !== undefined && !ip.startsWith('127.') && ip !== '::1' && !ip.includes(':'));
  await writeFile(path, `# written by ramify serve\n${servers.map((ip) => `nameserver ${ip}`).join('\n')}\n`);
  return path;
}
