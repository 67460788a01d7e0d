/**
 * The composition root: the ONLY module that imports the real implementations of core's ports. It
 * builds store, snapshot storage, network, runtime, agent connector and template builder from options
 * (implementations never read config themselves) and hands them to `createCore`.
 *
 * WIRING POINTS (search for "WIRING:"): each real implementation is created in one place below; any of
 * them can be replaced through `overrides` (tests, other hosts). A runtime that cannot start here (no
 * `runsc`, no QEMU) is logged and left out: the daemon still serves, and creates for it fail
 * `RUNTIME_UNAVAILABLE`.
 */
import type { RuntimeName } from '@ramify/contracts';
import { join } from 'node:path';
import { AGENT_BUNDLE_PATH, connectAgent } from '@ramify/agent';
import {
  BufferedEgressLog,
  closeCoreSinks,
  createCore,
  teeTelemetry,
  OPEN_EGRESS_POLICY,
  systemClock,
  type Clock,
  type ConnectAgent,
  type Core,
  type CoreOptions,
  type EgressEnforcer,
  type Logger,
  type PrivateNetworkEnforcer,
  type Runtime,
  type SandboxNetwork,
  type SnapshotStorage,
  type Store,
  type TemplateBuilder,
} from '@ramify/core';
import {
  DNS_SERVICE_ADDRESS,
  MAX_SLOT,
  NamespaceNetwork,
  layoutForPrefix,
  startHostEgress,
  type DnsUpstream,
  type HostEgress,
  type HostEgressOptions,
} from '@ramify/network';
import { GvisorRuntime } from '@ramify/runtime-gvisor';
import { openAgentDialing } from './agent-channel.js';
import { resolveMaxOutputBytes } from './config.js';
import { resolveHostId } from './host-id.js';
import type { ServeRole } from './roles/role.js';
import { openRuntimes, type GvisorOptions, type MicrovmOptions } from './runtimes.js';
import { closeSnapshotStorage, openSnapshotStorage, type SnapshotStorageConfig } from './snapshot-storage.js';
import { openStore, type StoreConfig } from '@ramify/store';
import { LocalTemplateBuilder } from '@ramify/template-builder';
import { createMetrics, type DaemonMetrics } from './observability/metrics.js';
import { startTracing, type Tracing } from './observability/tracing.js';
import { createWebhookSender } from './observability/webhook-sender.js';

/** Replacements for the real implementations (each optional). `templateBuilder: null` disables building. */
export interface ComposeOverrides {
  store?: Store;
  runtimes?: Runtime[];
  network?: SandboxNetwork;
  storage?: SnapshotStorage;
  connectAgent?: ConnectAgent;
  templateBuilder?: TemplateBuilder | null;
  egressEnforcer?: EgressEnforcer;
  networkEnforcer?: PrivateNetworkEnforcer;
}

export interface NetworkOptions {
  /** Prefix of namespaces, interfaces and the nftables table (1-4 lowercase letters); default `rmf`. Distinct daemons on one host need distinct prefixes. */
  prefix?: string;
}

export interface EgressOptions {
  /**
   * `enforce` (default): the host enforces every sandbox's egress policy (nftables table + policy DNS
   * resolver; see `@ramify/network` `startHostEgress`); start fails when `nft` is missing.
   * `off`: policies are validated and stored but not enforced (egress open; sandboxes use the host's nameservers).
   * Ignored (off) when `overrides.network` or `overrides.egressEnforcer` is given.
   */
  mode?: 'enforce' | 'off';
  /** Resolvers the policy resolver forwards allowed names to; default the host's /etc/resolv.conf nameservers (no loopback). */
  upstreams?: DnsUpstream[];
  /** Host port of the policy resolver; default a free port chosen at start. */
  resolverPort?: number;
}

export interface ComposeOptions {
  /**
   * `api` (`ramify serve --role api`): this process runs no sandboxes, so nothing of a host is built: no
   * runtime, sandbox network (core's `network` is null), egress enforcement, agent channel or template
   * builder; `overrides` of those are ignored. Default: everything (one machine, or a host).
   */
  role?: ServeRole;
  dataDir: string;
  /** This host's id; default the data directory's (made once: see host-id.ts). */
  hostId?: string;
  /** Template root filesystem layers (shared, content-addressed). */
  cacheDir: string;
  logger: Logger;
  clock?: Clock;
  overrides?: ComposeOverrides;
  coreOptions?: Partial<CoreOptions>;
  /**
   * Per-stream limit of command results, bytes (see `resolveMaxOutputBytes` in config.ts); default 32 MiB.
   * Overrides `coreOptions.maxOutputBytes`.
   */
  maxOutputBytes?: number;
  gvisor?: GvisorOptions;
  /** QEMU microVM runtime options. */
  microvm?: MicrovmOptions;
  /** Runtimes to open, the first being the default; default `['gvisor', 'microvm']` (each one the host has). */
  runtimes?: RuntimeName[];
  network?: NetworkOptions;
  egress?: EgressOptions;
  /** Where snapshots live (see snapshot-storage.ts); default local disk under `dataDir`. */
  snapshotStorage?: SnapshotStorageConfig;
  /** Where state lives (see database.ts); default SQLite at `<dataDir>/ramify.db`. */
  store?: StoreConfig;
  /** `collect` (default): Prometheus metrics (observability/metrics.ts); `off`: none (`/metrics` is 503). */
  metrics?: 'collect' | 'off';
  /** Export traces over OTLP/HTTP to this collector (see {@link startTracing}); absent: no tracing, nothing of OpenTelemetry loaded. */
  otlpEndpoint?: string;
}

export interface Composition {
  core: Core;
  /** The daemon's metrics; null when off. */
  metrics: DaemonMetrics | null;
  /** The trace exporter; null without `otlpEndpoint`. */
  tracing: Tracing | null;
  /** Close what compose opened (the egress log's buffer is written, then the store closes); sandboxes keep running. */
  close(): Promise<void>;
}

/** Wire every port and build the core context. @throws RamifyError VALIDATION_FAILED for a bad `maxOutputBytes`. */
export async function compose(options: ComposeOptions): Promise<Composition> {
  const { dataDir, logger, overrides = {} } = options;
  // Checked before anything is opened.
  const coreOptions = { ...options.coreOptions, ...(options.maxOutputBytes !== undefined ? { maxOutputBytes: resolveMaxOutputBytes(options.maxOutputBytes) } : {}) };
  const clock = options.clock ?? systemClock;
  const hostId = await resolveHostId(dataDir, options.hostId);
  // WIRING: store (SQLite under the data dir, or Postgres at a URL, opened first: an unreachable database fails fast naming
  // its fix; network slots bounded by the address layout).
  const store = overrides.store ?? (await openStore(options.store ?? { kind: 'sqlite', path: join(dataDir, 'ramify.db') }, { maxSlots: MAX_SLOT }));
  // WIRING: snapshot storage (local disk, or S3 behind the local cache; the bucket is checked here, before anything else opens).
  let storage: SnapshotStorage;
  try {
    storage = overrides.storage ?? (await openSnapshotStorage(dataDir, options.snapshotStorage ?? { kind: 'local' }, logger));
  } catch (err) {
    if (!overrides.store) await store.close();
    throw err;
  }
  if (options.role === 'api') return composeApi({ options, coreOptions, store, storage, hostId, clock, logger });
  // What composeHost opened, closed again (last first) when a later step of it fails: the egress table's
  // watchdog, ulogd and the resolver, the agent table's watchdog and dialer, the trace exporter. The tables
  // stay; a failed daemon start removes them (serve.ts, reset-network.ts `undoNetworkSetUp`).
  const openedSteps: Array<() => unknown> = [];
  try {
    return await composeHost({ options, coreOptions, store, storage, hostId, clock, logger, opened: openedSteps });
  } catch (err) {
    for (const close of openedSteps.reverse()) await Promise.resolve().then(close).catch(() => undefined);
    await closeSnapshotStorage(storage).catch(() => undefined);
    if (!overrides.store) await store.close().catch(() => undefined);
    throw err;
  }
}

/**
 * A host's (and a single daemon's) composition: network, egress enforcement, the agent channel, runtimes and
 * the template builder over `store` and `storage`; pushes the close of each thing it opens onto `opened`.
 */
async function composeHost(parts: { options: ComposeOptions; coreOptions: Partial<CoreOptions>; store: Store; storage: SnapshotStorage; hostId: string; clock: Clock; logger: Logger; opened: Array<() => unknown> }): Promise<Composition> {
  const { options, coreOptions, store, storage, hostId, clock, logger } = parts;
  const { dataDir, overrides = {} } = options;
  // Rows from before host ids (migration 26) are this daemon's: it is the only one that ever used them.
  const adopted = await store.adoptUnhostedRows(hostId);
  if (adopted.sandboxes + adopted.snapshots + adopted.slots > 0) logger.info('adopted rows recorded before host ids', { hostId, ...adopted });
  const prefix = options.network?.prefix ?? 'rmf';
  // WIRING: egress log (enforcement's verdicts, buffered into the store in batches; core reads it).
  const egressLog = new BufferedEgressLog({ store, logger, clock });
  const { metrics, tracing, telemetry } = await openTelemetry(options, store);
  if (tracing) parts.opened.push(() => tracing.shutdown());
  // WIRING: egress enforcement (one nftables table per prefix + the policy DNS resolver + the table watchdog).
  const hostEgress =
    !overrides.network && !overrides.egressEnforcer && (options.egress?.mode ?? 'enforce') === 'enforce'
      ? await openHostEgress(prefix, logger, options.egress ?? {}, (verdict) => {
          metrics?.egressVerdict(verdict);
          egressLog.record(verdict);
        })
      : undefined;
  if (hostEgress) parts.opened.push(() => hostEgress.close());
  // WIRING: network (namespaces + slots; the host table is the enforcer's when egress is enforced).
  const network = overrides.network ?? new NamespaceNetwork({ prefix, ...(hostEgress ? { hostFirewall: hostEgress.enforcer } : {}) });
  // WIRING: the gVisor agent channel over TCP into each sandbox's netstack (firewall table + dialer) on the
  // namespace network's slots; without it, agents are reached through `runsc exec`.
  const agentDialing =
    !overrides.runtimes && network instanceof NamespaceNetwork && (options.runtimes ?? ['gvisor']).includes('gvisor')
      ? await openAgentDialing(prefix, network.layout, logger)
      : null;
  if (agentDialing) parts.opened.push(() => agentDialing.close());
  // WIRING: agent connector (host side of the agent protocol).
  const connect: ConnectAgent = overrides.connectAgent ?? ((channel, opts) => connectAgent(channel, { pingTimeoutMs: opts?.pingTimeoutMs }));
  // WIRING: runtimes (gVisor and the QEMU microVM; a new runtime is opened in runtimes.ts).
  const opened = overrides.runtimes
    ? { runtimes: overrides.runtimes, unavailable: {} }
    : await openRuntimes({
        dataDir, cacheDir: options.cacheDir, logger, nameservers: hostEgress ? [DNS_SERVICE_ADDRESS] : null,
        ...(options.runtimes ? { names: options.runtimes } : {}),
        gvisor: { ...options.gvisor, ...(agentDialing ? { dialAgent: agentDialing.dial } : {}) },
        ...(options.microvm ? { microvm: options.microvm } : {}),
      });
  const { runtimes } = opened;
  // WIRING: template builder (needs a runtime to boot the template).
  const templateBuilder =
    overrides.templateBuilder !== undefined
      ? (overrides.templateBuilder ?? undefined)
      : runtimes[0]
        ? new LocalTemplateBuilder({ hostId, store, dataDir: options.cacheDir, agentBundlePath: AGENT_BUNDLE_PATH, runtimes, network: withOpenEgress(network, hostEgress), storage, connectAgent: connect })
        : undefined;

  // WIRING: the enforcers core calls (apply/remove): egress policies, and private networks on the same table.
  const egressEnforcer = overrides.egressEnforcer ?? hostEgress?.enforcer;
  const networkEnforcer = overrides.networkEnforcer ?? hostEgress?.networks;

  // WIRING: webhook deliveries go out over node:http(s), to public addresses only unless allowed (--webhook-allow-private).
  const core = createCore({
    hostId, store, runtimes, unavailableRuntimes: opened.unavailable, network, storage, connectAgent: connect, clock, logger, templateBuilder, egressEnforcer, networkEnforcer, egressLog,
    telemetry, webhookSender: createWebhookSender({ allowPrivateDestinations: coreOptions.webhooks?.allowPrivateDestinations ?? false }), options: coreOptions,
  });
  if (metrics) watchQueues(metrics, core);
  tracing?.deferExportsWhileBusy(() => core.foreground.quietForMs());
  return {
    core,
    metrics,
    tracing,
    close: async () => {
      await core.sessions.closeAll();
      agentDialing?.close();
      // Let background `runsc delete`s of old incarnations finish.
      for (const runtime of runtimes) if (runtime instanceof GvisorRuntime) await runtime.settle();
      if (network instanceof NamespaceNetwork) await network.settle();
      await closeSnapshotStorage(storage);
      // Write what the logs still buffer (later entries are dropped) before the store goes.
      await closeCoreSinks(core);
      await tracing?.shutdown().catch((err: unknown) => logger.warn('tracing: the last export failed', { error: err instanceof Error ? err.message : String(err) }));
      if (!overrides.store) await store.close();
      // The table stays: policies keep being enforced while the daemon is down.
      await hostEgress?.close();
    },
  };
}

/**
 * The API role's core: the store, snapshot storage (images are read, e.g. a durable image's manifest, never
 * run), metrics and traces; no runtime, network, egress enforcement or template builder is built, so this
 * process needs none of a host's tools (runsc, QEMU, nft, namespaces).
 */
async function composeApi(parts: { options: ComposeOptions; coreOptions: Partial<CoreOptions>; store: Store; storage: SnapshotStorage; hostId: string; clock: Clock; logger: Logger }): Promise<Composition> {
  const { options, coreOptions, store, storage, hostId, clock, logger } = parts;
  const { metrics, tracing, telemetry } = await openTelemetry(options, store);
  const core = createCore({
    hostId, store, runtimes: [], network: null, storage, clock, logger, telemetry, webhookSender: createWebhookSender({ allowPrivateDestinations: coreOptions.webhooks?.allowPrivateDestinations ?? false }), options: coreOptions,
    connectAgent: () => Promise.reject(new Error('an API process reaches no sandbox agent: calls on sandboxes are forwarded to their hosts')),
  });
  if (metrics) watchQueues(metrics, core);
  tracing?.deferExportsWhileBusy(() => core.foreground.quietForMs());
  return {
    core, metrics, tracing,
    close: async () => {
      await closeSnapshotStorage(storage);
      await closeCoreSinks(core);
      await tracing?.shutdown().catch((err: unknown) => logger.warn('tracing: the last export failed', { error: err instanceof Error ? err.message : String(err) }));
      if (!options.overrides?.store) await store.close();
    },
  };
}

/** WIRING: metrics (prom-client) and traces (OpenTelemetry, loaded only with an endpoint): core's telemetry. */
async function openTelemetry(options: ComposeOptions, store: Store): Promise<{ metrics: DaemonMetrics | null; tracing: Tracing | null; telemetry: ReturnType<typeof teeTelemetry> }> {
  const metrics = options.metrics === 'off' ? null : createMetrics({ store });
  const tracing = options.otlpEndpoint ? await startTracing({ endpoint: options.otlpEndpoint, logger: options.logger }) : null;
  return { metrics, tracing, telemetry: teeTelemetry([metrics?.telemetry, tracing?.telemetry].filter((t) => t !== undefined)) };
}

/**
 * Start egress enforcement, reporting its verdicts to `egressLog`; rejects (daemon start fails) when nft is
 * unavailable or the table cannot be installed.
 */
async function openHostEgress(prefix: string, logger: Logger, egress: EgressOptions, onVerdict: NonNullable<HostEgressOptions['onVerdict']>): Promise<HostEgress> {
  const hostEgressOptions: HostEgressOptions = {
    prefix,
    layout: layoutForPrefix(prefix),
    ...(egress.upstreams ? { upstreams: egress.upstreams } : {}),
    ...(egress.resolverPort !== undefined ? { resolverPort: egress.resolverPort } : {}),
    onDenied: (e) => logger.debug('egress: DNS name denied', { sandboxId: e.sandboxId, name: e.name, qtype: e.qtype }),
    onError: upstreamQuiet(logger),
    onReinstall: () => logger.warn('egress: the nftables table was missing; re-installed it with every policy', { prefix }),
    onVerdict,
  };
  const hostEgress = await startHostEgress(hostEgressOptions).catch((err: unknown) => {
    throw new Error(`egress enforcement could not start (nftables is required; pass egress.mode 'off' to run without it): ${err instanceof Error ? err.message : String(err)}`);
  });
  logger.info('egress enforcement ready', {
    prefix,
    resolverPort: hostEgress.resolver.address.port,
    proxyPorts: hostEgress.proxyPorts,
    connectionLog: hostEgress.nflog ? `nftables log group ${hostEgress.nflogGroup} via ulogd` : 'off (ulogd2 missing: only DNS and proxy verdicts are logged)',
  });
  return hostEgress;
}

/**
 * Egress errors for the log. A failed upstream lookup is a sandbox's failed lookup (its egress log says so,
 * bounded per sandbox): a loop of them must not flood the daemon's log, so those are one warning a minute
 * with how many failed since; every other error is a warning each.
 */
function upstreamQuiet(logger: Logger): NonNullable<HostEgressOptions['onError']> {
  let lastAt = 0;
  let since = 0;
  return (err, source) => {
    const error = err instanceof Error ? err.message : String(err);
    if (source !== 'upstream') return logger.warn('egress: error', { source, error });
    since++;
    if (Date.now() - lastAt < 60_000) return;
    logger.warn('egress: upstream DNS lookups are failing (each is in its sandbox\'s egress log)', { failed: since, last: error });
    lastAt = Date.now();
    since = 0;
  };
}

/**
 * The queues `ramify_queue_size` reports. Another queue (the warm pool) is one `metrics.addQueue` line here.
 */
function watchQueues(metrics: DaemonMetrics, core: Core): void {
  metrics.countEvents(core.eventLog.stored);
  metrics.countLostInstances(core.events);
  metrics.addQueue('webhook_deliveries', () => core.webhooks.queueSize());
  metrics.addQueue('events', () => core.eventLog.stats().pending);
  metrics.addQueue('command_log', () => core.commandLog.stats().pending);
  metrics.addQueue('egress_log', () => core.egressLog.stats().pending);
  metrics.addQueue('ingress_log', () => core.ingressLog.stats().pending);
  // Idle sandboxes of the warm pool (docs/design/POOL.md); its hits and misses are in GET /v1/health.
  metrics.addQueue('warm_pool', () => core.pool.stats().idle);
}

/**
 * The network the template builder uses: its build sandboxes never get a policy from core, so give their
 * slot open egress on attach (or the enforcer drops their traffic) and release it on detach.
 */
function withOpenEgress(network: SandboxNetwork, hostEgress: HostEgress | undefined): SandboxNetwork {
  if (!hostEgress) return network;
  const enforcer = hostEgress.enforcer;
  return {
    attach: async (sandboxId, slot) => {
      const attachment = await network.attach(sandboxId, slot);
      await enforcer.apply(sandboxId, slot, OPEN_EGRESS_POLICY);
      return attachment;
    },
    detach: async (slot) => {
      await enforcer.remove(slot).catch(() => undefined);
      await network.detach(slot);
    },
    detachIfUnused: (slot, unused) => network.detachIfUnused(slot, unused),
    listSlots: () => network.listSlots(),
    prewarm: (slots) => network.prewarm(slots),
  };
}

