/**
 * The composition root: the ONLY module that imports the real implementations of core's ports. It
 * builds store, snapshot storage, network, runtime, agent connector and template builder from options
 * (implementations never read config themselves) and hands them to `createCore`.
 *
 * WIRING POINTS (search for "WIRING:"): each real implementation is created in one place below; any of
 * them can be replaced through `overrides` (tests, other hosts). A runtime that cannot start here (no
 * `runsc`) is logged and left out: the daemon still serves, and creates fail `RUNTIME_UNAVAILABLE`.
 */
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { AGENT_BUNDLE_PATH, connectAgent } from '@ramify/agent';
import {
  createCore,
  systemClock,
  type Clock,
  type ConnectAgent,
  type Core,
  type CoreOptions,
  type EgressEnforcer,
  type Logger,
  type Runtime,
  type SandboxNetwork,
  type SnapshotStorage,
  type Store,
  type TemplateBuilder,
} from '@ramify/core';
import { MAX_SLOT, NamespaceNetwork } from '@ramify/network';
import { GvisorRuntime, type RunscPlatform } from '@ramify/runtime-gvisor';
import { LocalSnapshotStorage } from '@ramify/storage';
import { SqliteStore } from '@ramify/store';
import { LocalTemplateBuilder } from '@ramify/template-builder';

/** Replacements for the real implementations (each optional). `templateBuilder: null` disables building. */
export interface ComposeOverrides {
  store?: Store;
  runtimes?: Runtime[];
  network?: SandboxNetwork;
  storage?: SnapshotStorage;
  connectAgent?: ConnectAgent;
  templateBuilder?: TemplateBuilder | null;
  egressEnforcer?: EgressEnforcer;
}

export interface GvisorOptions {
  /** runsc binary; default `runsc` on PATH. */
  runscPath?: string;
  /** Default `ptrace` (`kvm` spins forever in nested VMs). */
  platform?: RunscPlatform;
  /** Parent cgroup of every sandbox; null disables limits. Default `/ramify`. */
  cgroupParent?: string | null;
}

export interface NetworkOptions {
  /** Prefix of namespaces, interfaces and the nftables table (1-4 lowercase letters); default `rmf`. Distinct daemons on one host need distinct prefixes. */
  prefix?: string;
}

export interface ComposeOptions {
  dataDir: string;
  /** Template root filesystem layers (shared, content-addressed). */
  cacheDir: string;
  logger: Logger;
  clock?: Clock;
  overrides?: ComposeOverrides;
  coreOptions?: Partial<CoreOptions>;
  gvisor?: GvisorOptions;
  network?: NetworkOptions;
}

export interface Composition {
  core: Core;
  /** Close what compose opened (the store); sandboxes keep running. */
  close(): Promise<void>;
}

/** Wire every port and build the core context. */
export async function compose(options: ComposeOptions): Promise<Composition> {
  const { dataDir, logger, overrides = {} } = options;
  const clock = options.clock ?? systemClock;
  // WIRING: store (SQLite under the data dir; slots bounded by the network's address layout).
  const store = overrides.store ?? new SqliteStore({ path: join(dataDir, 'ramify.db'), maxSlots: MAX_SLOT });
  // WIRING: snapshot storage (local disk; S3 later).
  const storage = overrides.storage ?? new LocalSnapshotStorage({ rootDir: dataDir });
  // WIRING: network (namespaces + slots + nftables).
  const network = overrides.network ?? new NamespaceNetwork({ ...(options.network?.prefix !== undefined ? { prefix: options.network.prefix } : {}) });
  // WIRING: agent connector (host side of the agent protocol).
  const connect: ConnectAgent = overrides.connectAgent ?? ((channel) => connectAgent(channel));
  // WIRING: runtimes (gVisor today; QEMU/Firecracker register here later).
  const runtimes = overrides.runtimes ?? (await openRuntimes(dataDir, logger, options.gvisor ?? {}));
  // WIRING: template builder (needs a runtime to boot the template).
  const templateBuilder =
    overrides.templateBuilder !== undefined
      ? (overrides.templateBuilder ?? undefined)
      : runtimes[0]
        ? new LocalTemplateBuilder({ store, dataDir: options.cacheDir, agentBundlePath: AGENT_BUNDLE_PATH, runtime: runtimes[0], network, storage, connectAgent: connect })
        : undefined;

  // WIRING: egress enforcement (nftables sets + policy DNS resolver + SNI/Host proxy); none yet, so
  // policies are validated and stored but not enforced.
  const egressEnforcer = overrides.egressEnforcer ?? undefined;

  const core = createCore({ store, runtimes, network, storage, connectAgent: connect, clock, logger, templateBuilder, egressEnforcer, options: options.coreOptions });
  return {
    core,
    close: async () => {
      await core.sessions.closeAll();
      // Let background `runsc delete`s of old incarnations finish.
      for (const runtime of runtimes) if (runtime instanceof GvisorRuntime) await runtime.settle();
      if (network instanceof NamespaceNetwork) await network.settle();
      if (storage instanceof LocalSnapshotStorage) await storage.settle();
      if (!overrides.store) await store.close();
    },
  };
}

async function openRuntimes(dataDir: string, logger: Logger, gvisor: GvisorOptions): Promise<Runtime[]> {
  try {
    const runtime = await GvisorRuntime.open({
      workDir: join(dataDir, 'runtime', 'gvisor'),
      resolvConfPath: await writeResolvConf(dataDir),
      ...(gvisor.runscPath !== undefined ? { runscPath: gvisor.runscPath } : {}),
      ...(gvisor.platform !== undefined ? { platform: gvisor.platform } : {}),
      ...(gvisor.cgroupParent !== undefined ? { cgroupParent: gvisor.cgroupParent } : {}),
    });
    logger.info('runtime ready', { runtime: runtime.name, version: runtime.version });
    return [runtime];
  } catch (err) {
    logger.warn('gVisor runtime unavailable; sandboxes cannot be created on this host', { error: err instanceof Error ? err.message : String(err) });
    return [];
  }
}

/**
 * The resolv.conf sandboxes see (bind-mounted read-only): the host's non-loopback nameservers.
 * WIRING: replace with the policy DNS resolver's address once `@ramify/network` serves one.
 */
async function writeResolvConf(dataDir: string): Promise<string> {
  const host = await readFile('/etc/resolv.conf', 'utf8').catch(() => '');
  const servers = host
    .split('\n')
    .map((line) => /^\s*nameserver\s+(\S+)/.exec(line)?.[1])
    .filter((ip): ip is string => ip !== undefined && !ip.startsWith('127.') && ip !== '::1' && !ip.includes(':'));
  const path = join(dataDir, 'resolv.conf');
  await mkdir(dataDir, { recursive: true });
  await writeFile(path, `# written by ramify serve\n${servers.map((ip) => `nameserver ${ip}`).join('\n')}\n`);
  return path;
}
