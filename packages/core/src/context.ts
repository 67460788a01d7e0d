/**
 * The shared core context: the ports one daemon wires (store, runtimes, network, snapshot storage, agent
 * connector, clock, logger), the tunables, and the shape of the in-process state every use-case shares
 * (per-host locks, live agent sessions, lifecycle events, the buffered logs, the usage meter). Use-cases
 * are plain functions taking a {@link Core} first and import it from here, never from the assembly
 * (`core.ts`, {@link createCore}), which imports them: so core has no import circle (`import-cycles.test.ts`).
 * Everything here but {@link DEFAULT_CORE_OPTIONS} and {@link runtimeFor} is a type.
 */
import { availableParallelism } from 'node:os';
import { DEFAULT_MAX_OUTPUT_BYTES, RamifyError, type IngressEndpoint, type RuntimeName, type TimeoutAction, type WarmPoolConfig } from '@ramify/contracts';
import type { ConnectAgent } from './ports/agent.js';
import type { Clock } from './ports/clock.js';
import type { EgressEnforcer } from './ports/egress.js';
import type { PrivateNetworkEnforcer } from './ports/private-networks.js';
import type { Logger } from './ports/logger.js';
import type { SandboxNetwork } from './ports/network.js';
import type { Runtime } from './ports/runtime.js';
import type { SnapshotStorage } from './ports/snapshot-storage.js';
import type { Store } from './ports/store.js';
import type { TemplateBuilder } from './ports/template-builder.js';
import type { SshEndpoint } from './ssh/access.js';
import type { BufferedEgressLog } from './egress/buffered-egress-log.js';
import type { SandboxActivity } from './idle/activity.js';
import type { BufferedIngressLog } from './ingress/ingress-log.js';
import type { AgentSessions } from './lifecycle/agent-sessions.js';
import type { SandboxEvents } from './lifecycle/events.js';
import type { KeyedLock } from './lifecycle/locks.js';
import type { ForegroundWork } from './lifecycle/foreground.js';
import type { WarmPool } from './pool/warm-pool.js';
import type { EventFeed } from './events/feed.js';
import type { EventHub } from './events/hub.js';
import type { EventRecorder } from './events/recorder.js';
import type { Telemetry } from './ports/telemetry.js';
import type { WebhookSender } from './ports/webhook-sender.js';
import type { BufferedCommandLog } from './sandbox/command-log.js';
import type { WebhookDispatcher, WebhookTunables } from './webhooks/dispatcher.js';
import type { UsageMeter } from './usage/meter.js';

/** Tunables; every field has a default (see {@link DEFAULT_CORE_OPTIONS}). */
export interface CoreOptions {
  /** How long pause/fork/snapshot wait for the sandbox's connected TCP endpoints to drain, ms. */
  quietNetworkTimeoutMs: number;
  /** Interval between endpoint polls while waiting, ms. */
  quietNetworkPollMs: number;
  /**
   * Bound on opening an agent channel plus its first ping, reconnects included, ms. Default 20000: a
   * restored microVM under TCG answers in ~0.2-1 s; the rest is room for a loaded host and reconnects.
   * After a restore it is multiplied by the restores sharing each core at that moment (`bring-up.ts`).
   */
  agentConnectTimeoutMs: number;
  /**
   * Start the runtime's instance while its image is still being downloaded (`SnapshotStorage.openArriving`,
   * docs/design/STORAGE.md, "Restore while the image arrives"). Default: on with more than 2 CPUs. On
   * 2 cores both are CPU-bound and the overlap was measured slower (the download slowed by more than the
   * restore gained); with a core to spare runsc's ~200 ms of set-up comes off a cross-host resume.
   */
  restoreWhileArriving: boolean;
  /** At most this many restores of one fork run at once. */
  forkConcurrency: number;
  /** Keep the network namespaces of this many free slots prepared ahead of creates and forks (0 = off). */
  prewarmSlots: number;
  /**
   * The warm pool of restored, idle sandboxes creates claim (docs/design/POOL.md). Default `off` here
   * (tests count sandboxes and runsc processes); `ramify serve` defaults to `auto`.
   */
  warmPool: WarmPoolConfig;
  /** Most `memoryMB` the pool's idle sandboxes may add up to, MiB. Default 2048 (`ramify serve`: 1/16 of the host's memory, 512 to 4096). */
  warmPoolBudgetMB: number;
  /** The pool refills only after foreground lifecycle calls have been quiet this long, ms. Default 250. */
  warmPoolQuietMs: number;
  /** Template used when a create names neither a template nor a snapshot. */
  defaultTemplate: string;
  defaultTimeoutMs: number;
  defaultOnTimeout: TimeoutAction;
  defaultCpuCount: number;
  defaultMemoryMB: number;
  /** How often the timeout scheduler looks for due sandboxes, ms. */
  timeoutSweepMs: number;
  /** How often the liveness monitor checks running sandboxes' runtime instances, ms (0 = off). */
  livenessPollMs: number;
  /**
   * A command result keeps at most this many bytes of each stream, the head (`truncated` and `capture`
   * say so; streams are never cut). Default `DEFAULT_MAX_OUTPUT_BYTES` (32 MiB); the daemon accepts
   * 0 to `MAX_OUTPUT_BYTES_CEILING` (40 MiB).
   */
  maxOutputBytes: number;
  /** After a timeout pause is refused (`CHECKPOINT_BLOCKED`), wait this long before trying again, ms. */
  timeoutRetryMs: number;
  /** Where port URLs point (the daemon's ingress listener); null when the daemon serves no ingress. */
  ingress: IngressEndpoint | null;
  /** Where SSH clients reach the daemon's gateway; null when the daemon serves none. */
  ssh: SshEndpoint | null;
  /**
   * How long a request to a paused sandbox waits for its wake (auto-resume) before it is answered 503 with
   * `Retry-After` (the resume goes on), ms. Default 30000.
   */
  ingressWakeTimeoutMs: number;
  /** How often the auto-pause scheduler looks at sandboxes with `autoPause`, ms (0 = off). Default 1000. */
  autoPauseSweepMs: number;
  /**
   * CPU use above which a sandbox is busy, not idle, in cores (0.1 = 10% of one core), averaged over one
   * auto-pause sweep. Default 0.1: a gVisor sandbox whose Python server had just started measured 0.045
   * cores over its first 3 s (real-ingress-idle.test.ts), a shell loop 0.87.
   */
  autoPauseCpuThreshold: number;
  /**
   * How often the sandboxes' last-use times are written to the store (`ActivityPersister`), ms (0 = only
   * when it stops). Default 5000: a crash loses at most this much of the idle clock.
   */
  activityPersistMs: number;
  /** How long events, webhook deliveries and the command log are kept, ms. Default 7 days (E2B's). */
  eventRetentionMs: number;
  /** How often what is past the retention is deleted, ms (0 = never). Default an hour. */
  eventPruneIntervalMs: number;
  /** Webhook delivery tunables (`webhooks/dispatcher.ts`); each field defaults. */
  webhooks: Partial<WebhookTunables>;
  /** On a store shared by several processes: how often the event feed reads the store when no notification woke it, ms (default 2000). */
  eventPollMs: number;
  /** `record` (default): lifecycle events are stored, listed, streamed and delivered; `off`: none are (benchmarks of their cost). */
  events: 'record' | 'off';
  /**
   * How often the usage sampler reads every running sandbox's counters (CPU, memory, disk, bytes in and
   * out), writes them to the store, takes a live metrics sample and checks budgets, ms. 0: metering off
   * (nothing is metered, no metrics, budgets are not enforced; for benchmarks). Default 5000, as E2B's
   * metrics. Auto-pause's CPU judgement averages over this interval.
   */
  usageSampleMs: number;
  /** How long live metrics samples are kept (in memory), ms. Default 3600000 (an hour). */
  metricsWindowMs: number;
}

export const DEFAULT_CORE_OPTIONS: CoreOptions = {
  quietNetworkTimeoutMs: 10_000,
  quietNetworkPollMs: 250,
  agentConnectTimeoutMs: 20_000,
  restoreWhileArriving: availableParallelism() > 2,
  forkConcurrency: 8,
  prewarmSlots: 8,
  warmPool: { mode: 'off' },
  warmPoolBudgetMB: 2048,
  warmPoolQuietMs: 250,
  defaultTemplate: 'base',
  defaultTimeoutMs: 300_000,
  defaultOnTimeout: 'pause',
  defaultCpuCount: 1,
  defaultMemoryMB: 512,
  timeoutSweepMs: 1_000,
  livenessPollMs: 1_000,
  maxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES,
  timeoutRetryMs: 30_000,
  ingress: null,
  ssh: null,
  ingressWakeTimeoutMs: 30_000,
  autoPauseSweepMs: 1_000,
  autoPauseCpuThreshold: 0.1,
  activityPersistMs: 5_000,
  eventRetentionMs: 7 * 24 * 3_600_000,
  eventPruneIntervalMs: 3_600_000,
  webhooks: {},
  eventPollMs: 2_000,
  events: 'record',
  usageSampleMs: 5_000,
  metricsWindowMs: 3_600_000,
};

/** What the composition root provides. */
export interface CoreDeps {
  /**
   * This host's stable id (`ramify serve` keeps it in its data dir, `--host-id` sets it): recorded on the
   * sandboxes and snapshots it holds; its network slots, locks and sweeps are its own.
   */
  hostId: string;
  store: Store;
  /** Available runtimes; the first is the default. May be empty (every create then fails `RUNTIME_UNAVAILABLE`). */
  runtimes: Runtime[];
  /**
   * Runtimes this host lacks, with why and what to install (e.g. `microvm`: "qemu-system-x86_64 not
   * found; apt-get install qemu-system-x86"); `RUNTIME_UNAVAILABLE` errors quote it.
   */
  unavailableRuntimes?: Partial<Record<RuntimeName, string>>;
  /**
   * The sandboxes' network (namespaces, slots); null when this process runs no sandboxes (`ramify serve
   * --role api`): starting one then fails `RUNTIME_UNAVAILABLE` ({@link networkFor}).
   */
  network: SandboxNetwork | null;
  storage: SnapshotStorage;
  connectAgent: ConnectAgent;
  clock: Clock;
  logger: Logger;
  /** Absent when no template builder is wired (`POST /v1/templates` then fails `RUNTIME_UNAVAILABLE`). */
  templateBuilder?: TemplateBuilder;
  /** Absent when egress is not enforced on this host: policies are still validated and stored. */
  egressEnforcer?: EgressEnforcer;
  /**
   * Absent when private networks are not enforced on this host (no egress enforcement): networks can be
   * created and listed, joining one is refused `RUNTIME_UNAVAILABLE`.
   */
  networkEnforcer?: PrivateNetworkEnforcer;
  /**
   * The egress log enforcement records verdicts into (it is the `EgressLogSink` to hand the
   * enforcer). Default: a {@link BufferedEgressLog} over `store` with default tunables. The composition root
   * creates it itself when enforcement must report before the core exists; whoever owns the core closes it
   * (`core.egressLog.close()`) before closing the store.
   */
  egressLog?: BufferedEgressLog;
  /** Where operations and their phases are timed (metrics, traces); default none ({@link NO_TELEMETRY}). */
  telemetry?: Telemetry;
  /** How webhook deliveries are POSTed; default none (every attempt fails: core's tests). */
  webhookSender?: WebhookSender;
  /** Fresh entropy for identities; default `crypto.randomBytes`. */
  entropy?: (bytes: number) => Uint8Array;
  options?: Partial<CoreOptions>;
}

/** The context every use-case receives. */
export interface Core extends Omit<CoreDeps, 'options' | 'entropy' | 'egressLog' | 'telemetry' | 'webhookSender'> {
  options: CoreOptions;
  telemetry: Telemetry;
  /**
   * Every stored event, published once in its team's order (live streams subscribe): this process's
   * alone on a store of its own, every process's on a shared one (`eventFeed`).
   */
  eventHub: EventHub;
  /** What fills `eventHub` (`events/feed.ts`); started once the process serves, closed before the store. */
  eventFeed: EventFeed;
  /** Stores every bus event that is an event of its own (`events/from-bus.ts`); flush before reading events. */
  eventLog: EventRecorder;
  /** Commands seen to end (the timeline's commands); closed with `egressLog` before the store. */
  commandLog: BufferedCommandLog;
  /** Delivers events to the teams' webhooks; closed before the store. */
  webhooks: WebhookDispatcher;
  egressLog: BufferedEgressLog;
  /** The ingress log sink (requests served per sandbox); closed with `egressLog` before the store. */
  ingressLog: BufferedIngressLog;
  /** Use of each sandbox (API calls, streams, ingress), for idle auto-pause. */
  activity: SandboxActivity;
  entropy: (bytes: number) => Uint8Array;
  /** Per-key locks of this host's calls (`locks.hostId` is {@link CoreDeps.hostId}); see `lifecycle/locks.ts`. */
  locks: KeyedLock;
  /** Lifecycle calls and foreground commands in flight; background work waits for its quiet (`lifecycle/foreground.ts`). */
  foreground: ForegroundWork;
  sessions: AgentSessions;
  events: SandboxEvents;
  /** Restored idle sandboxes creates claim; pooled ones have no store row (see pool/warm-pool.ts). */
  pool: WarmPool;
  /** Metering (time and counters of every sandbox) and live metrics; see `usage/meter.ts`. */
  meter: UsageMeter;
}

/**
 * The sandboxes' network of this process.
 * @throws RamifyError `RUNTIME_UNAVAILABLE` when it runs no sandboxes (the API role: `network` is null).
 */
export function networkFor(core: Pick<Core, 'network' | 'hostId'>): SandboxNetwork {
  if (core.network === null) throw new RamifyError('RUNTIME_UNAVAILABLE', `this process (${core.hostId}) runs no sandboxes: it has no sandbox network (an API process forwards such calls to a host)`);
  return core.network;
}

/**
 * The runtime called `name`, or the default (first) one when `name` is absent.
 * @throws RamifyError `RUNTIME_UNAVAILABLE` when it is not wired into this daemon.
 */
export function runtimeFor(core: Pick<Core, 'runtimes' | 'unavailableRuntimes'>, name?: RuntimeName): Runtime {
  const runtime = name ? core.runtimes.find((r) => r.name === name) : core.runtimes[0];
  if (!runtime) {
    const which = name ? `runtime '${name}' is` : 'no runtime is';
    const why = name ? core.unavailableRuntimes?.[name] : undefined;
    throw new RamifyError('RUNTIME_UNAVAILABLE', `${which} not available on this host${why ? `: ${why}` : ''}`, name ? { runtime: name, ...(why ? { reason: why } : {}) } : undefined);
  }
  return runtime;
}
