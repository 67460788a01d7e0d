/**
 * `serve()`: start the daemon (what `ramify serve` runs). Order: data directory (0700) → its lock → the
 * listeners' addresses checked → compose the ports (network set-up begins) → first-start API key →
 * reconcile (re-attach running sandboxes, finish or undo half-done operations, remove orphans) → timeout,
 * liveness, auto-pause and usage schedulers → ingress, SSH → HTTP + WebSocket listener. A failed start
 * undoes the network set-up it made (docs/design/ARCHITECTURE.md, "A failed start").
 */
import { chmod, mkdir } from 'node:fs/promises';
import { pino, type DestinationStream, type Logger as Pino } from 'pino';
import { totalmem } from 'node:os';
import { defaultWarmPoolBudgetMB, isRamifyError, parseWarmPoolSpec, type WarmPoolConfig } from '@ramify/contracts';
import {
  ActivityPersister, AutoPauseScheduler, EventPruner, LivenessMonitor, prewarmFreeSlots, reconcile, startHostSweep, TimeoutScheduler, UsageSampler, type Core, type CoreOptions, type Logger,
} from '@ramify/core';
import type { FastifyInstance } from 'fastify';
import { ensureApiKey } from './api-key-bootstrap.js';
import { buildApp } from './app.js';
import type { TracedCalls } from './http/route.js';
import { compose, type ComposeOptions } from './compose.js';
import { lockDataDir, type DataDirLock } from './data-dir-lock.js';
import { lockNetworkPrefix, type NetworkPrefixLock } from './network-prefix-lock.js';
import { DEFAULT_HOST, DEFAULT_INGRESS_PORT, DEFAULT_PORT, DEFAULT_SSH_PORT, resolveCacheDir, resolveDataDir, resolveWebhookAllowPrivate } from './config.js';
import { checkListeners, startListener, type ListenerKind, type PlannedListener } from './listen-check.js';
import { networkFootprint, undoNetworkSetUp, type NetworkFootprint } from './reset-network.js';
import { describeSnapshotStorage, resolveSnapshotStorage, type SnapshotStorageFlags } from './snapshot-storage.js';
import { describeDatabase, resolveDatabase } from './database.js';
import { startIngress, type IngressOptions, type RunningIngress } from './ingress.js';
import { startSshGateway, type RunningSshGateway, type SshOptions } from './ssh/gateway.js';
import { startSshRelay } from './ssh/relay.js';
import { startMetricsListener, type MetricsListener } from './observability/metrics-listener.js';
import { startHostAgent, type HostAgent } from './roles/host-agent.js';
import { startIngressEdge } from './roles/ingress-edge.js';
import { checkRoleConfig, type ServeRole } from './roles/role.js';

export interface ServeOptions {
  /**
   * `single` (default: one machine, everything here), `api` (no runtimes or networking: serves the shared
   * store and forwards calls on sandboxes to their hosts) or `host` (runtimes and networking; registers in
   * the host registry): `ramify serve --role`. `api` and `host` need Postgres and S3 (docs/design/SCALE-OUT.md).
   */
  role?: ServeRole;
  /** The host role's URL for API processes (`--advertise-url`), e.g. `http://10.0.0.5:7423`. */
  advertiseUrl?: string;
  /** The host role's lease and heartbeat period (ms); default 10 s and 3 s (roles/host-agent.ts). Tests shorten them. */
  hostLease?: { leaseMs: number; heartbeatMs: number };
  /** Default: `RAMIFY_HOME`, else `/var/lib/ramify`. */
  dataDir?: string;
  /**
   * This host's id (`ramify serve --host-id`), stored in the data directory the first time; default the
   * stored one, else a fresh `host-<12 hex>` (host-id.ts). A data directory keeps its id.
   */
  hostId?: string;
  /** Template layer cache. Default: `RAMIFY_CACHE_DIR`, else `/var/cache/ramify`. */
  cacheDir?: string;
  /** Default `127.0.0.1` (loopback only). */
  host?: string;
  /** Default 7423; 0 picks a free port (see {@link RamifyServer.url}). */
  port?: number;
  /** Log level of the daemon's JSON log (stderr); default `info`. `silent` turns it off. */
  logLevel?: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Where the JSON log lines go; default stderr (`ramify serve --detach`: `<dataDir>/serve.log`). Tests capture them. */
  logDestination?: DestinationStream;
  /**
   * Whether a failed start logs `ramify failed to start` (default true). A foreground `ramify serve`
   * prints the error itself for a human, and turns the line off unless its stderr is a file (a log file,
   * `--detach`'s serve.log, where `ramify serve --detach` reads the line back): one error, said once.
   */
  logStartFailure?: boolean;
  /** Where the first-start API key line is printed; default stdout. */
  print?: (line: string) => void;
  /** Skip reconcile on start (tests of the HTTP edge only). Default `run`. */
  reconcile?: 'run' | 'skip';
  /** Passed to {@link compose}: implementation overrides, core tunables, gVisor options. */
  overrides?: ComposeOptions['overrides'];
  coreOptions?: ComposeOptions['coreOptions'];
  /**
   * The warm pool (docs/design/POOL.md): a `--warm-pool` spec (`auto`, `off`, `base=2,python-tests=1`,
   * `base:microvm=1`) or its parsed form. Default `off` here (tests); `ramify serve` passes `auto`.
   * Overrides `coreOptions.warmPool`.
   */
  warmPool?: string | WarmPoolConfig;
  /** Most memoryMB the pool's idle sandboxes may add up to, MiB; default 1/16 of the host's memory (512 to 4096). */
  warmPoolBudgetMB?: number;
  /**
   * Per-stream limit of command results, bytes, 0 to 40 MiB; default 32 MiB (`ramify serve
   * --max-output-bytes`). Results keep the head of each stream and say when they were cut.
   */
  maxOutputBytes?: number;
  gvisor?: ComposeOptions['gvisor'];
  /** QEMU microVM runtime options (see {@link ComposeOptions.microvm}). */
  microvm?: ComposeOptions['microvm'];
  /** Runtimes to open, the first the default; default every one the host has (see {@link ComposeOptions.runtimes}). */
  runtimes?: ComposeOptions['runtimes'];
  network?: ComposeOptions['network'];
  /** Egress enforcement (default on; see {@link ComposeOptions.egress}). */
  egress?: ComposeOptions['egress'];
  clock?: ComposeOptions['clock'];
  /**
   * The ingress listener for port URLs (`<port>-<sandboxId>.<domain>`); absent: none (`ramify serve` starts
   * one on 127.0.0.1:7424, domain `localhost`, unless told `--ingress-listen off`). Role `api`: the ingress
   * edge, which proxies each port URL to its sandbox's host's ingress (roles/ingress-edge.ts).
   */
  ingress?: IngressOptions;
  /**
   * The SSH gateway (`ssh -p PORT <sandboxId>@HOST`); absent: none (`ramify serve` starts one on
   * 127.0.0.1:2222 unless told `--ssh-listen off`). Its host key is made once in the data directory. In the
   * `api` role it relays every sandbox's connections to its host's gateway (ssh/relay.ts).
   */
  ssh?: SshOptions;
  /**
   * Snapshot storage flags (`ramify serve --s3-*`, `--snapshot-cache-bytes`); each `RAMIFY_S3_*` /
   * `RAMIFY_SNAPSHOT_CACHE_BYTES` variable fills in a flag not given. No bucket: local disk.
   */
  snapshotStorage?: SnapshotStorageFlags;
  /**
   * Keep state in Postgres at this URL (`ramify serve --database-url`), the shared state of several Ramify
   * processes; `RAMIFY_DATABASE_URL` fills it in when absent. None: SQLite in the data directory.
   */
  databaseUrl?: string;
  /** Prometheus metrics: `collect` (default; `GET /metrics` with an admin key of the default team) or `off`. */
  metrics?: ComposeOptions['metrics'];
  /** Also serve `GET /metrics` without auth on this address (`ramify serve --metrics-listen`); absent: no such listener. */
  metricsListen?: { host: string; port: number };
  /** Export traces over OTLP/HTTP to this collector (`ramify serve --otlp-endpoint`); absent: no tracing. */
  otlpEndpoint?: string;
  /**
   * Which API calls are traces (`ramify serve --otlp-traces`): `writes` (default: the calls that change
   * something; reads such as a client polling `GET /v1/sandboxes/{id}` are not) or `all`.
   */
  otlpTraces?: TracedCalls;
  /**
   * Let webhooks reach loopback, private, link-local and this host's own addresses (`ramify serve
   * --webhook-allow-private`, else `RAMIFY_WEBHOOK_ALLOW_PRIVATE`); default false: public addresses only.
   * Overrides `coreOptions.webhooks.allowPrivateDestinations`.
   */
  webhookAllowPrivate?: boolean;
}

/** Why a daemon stops, as its `ramify stopped` log line says: the signal `ramify serve` received, or `close` (a caller of {@link RamifyServer.close}). */
export type StopReason = 'SIGTERM' | 'SIGINT' | 'close';

export interface RamifyServer {
  /** `http://host:port` actually listened on. */
  url: string;
  dataDir: string;
  app: FastifyInstance;
  core: Core;
  /** The ingress listener (`host:port`) and where port URLs point; null without one. */
  ingress: { address: string; url: string } | null;
  /** The SSH gateway: `host:port` listened on, where clients dial, and the host key's fingerprint; null without one. */
  ssh: { address: string; host: string; port: number; fingerprint: string } | null;
  /** The unauthenticated metrics listener's `host:port`; null without one. */
  metricsAddress: string | null;
  /** Where traces are exported; null without tracing. */
  otlpUrl: string | null;
  /** The API key made on this start (first start only), else null. */
  newApiKey: string | null;
  /** One line per runtime: `gvisor: runsc ...`, `microvm: QEMU 7.2, TCG (why)`, or `microvm unavailable: why`. */
  runtimeSummary: string[];
  /** Where snapshots live: `local disk (...)` or the bucket and the local cache's budget. */
  snapshotStorage: string;
  /** Where state lives: `SQLite (<path>)` or `Postgres at <URL without password>`. */
  database: string;
  /** The role it serves in. */
  role: ServeRole;
  /**
   * Host role: drain (state `draining`, pause its running sandboxes, wait for their uploads, state `gone`);
   * other roles: nothing. `ramify serve --role host` calls it on SIGTERM, before {@link close}.
   */
  drain(): Promise<{ paused: string[]; failed: string[]; uploadsDone: boolean } | null>;
  /**
   * Stop listening, stop the scheduler, close agent channels and the store, release the data directory;
   * then log `ramify stopped` with `reason` (`ramify serve` passes the signal it received, `SIGTERM` or
   * `SIGINT`; default `close`), or `ramify stop failed` when a step failed (and rethrow). Sandboxes keep running.
   */
  close(reason?: StopReason): Promise<void>;
}

/**
 * Start the daemon; its log says `ramify serving` (url, dataDir, hostId, role) once the API answers, and
 * `ramify failed to start` (dataDir, role, code, error, details) when it rejects (unless
 * {@link ServeOptions.logStartFailure} is false). Rejects when the data directory cannot be used;
 * `DATA_DIR_IN_USE` when another daemon holds the data directory (its lock, data-dir-lock.ts: taken before
 * anything else is opened, released by `close()` or the process's end); `NETWORK_PREFIX_IN_USE` when a
 * daemon of another data directory uses the same network prefix (network-prefix-lock.ts, taken next); `ADDRESS_IN_USE` when a listener's
 * address (API, ingress, SSH, metrics) is taken, checked before anything else is set up (listen-check.ts);
 * after any failure once the network set-up began, the set-up this start made is removed, or the error's
 * message says what stays and how to remove it (`ramify serve --reset-network`);
 * `VALIDATION_FAILED` for a bad `maxOutputBytes`, snapshot storage setting or database URL; `STORAGE_UNAVAILABLE` when
 * a configured bucket cannot be listed, written or deleted from; `DATABASE_UNAVAILABLE` when the Postgres
 * database cannot be opened (both messages say what failed and how to fix it).
 */
export async function serve(options: ServeOptions = {}): Promise<RamifyServer> {
  const dataDir = resolveDataDir(options.dataDir);
  const log = pino({ level: options.logLevel ?? 'info', base: { svc: 'ramify' } }, options.logDestination ?? pino.destination(2));
  const role = options.role ?? 'single';
  try {
    return await start(options, dataDir, log);
  } catch (err) {
    // The counterpart of 'ramify serving' (and of 'ramify stopped'): a start that failed says so in the log,
    // after start() released what it had opened.
    if (options.logStartFailure !== false) {
      adaptLogger(log).error('ramify failed to start', { dataDir, role, ...errorFields(err) });
      log.flush();
    }
    throw err;
  }
}

/** The listeners {@link serve} opens for `options`, with their defaults filled in. */
function plannedListeners(options: ServeOptions): PlannedListener[] {
  const planned = (kind: ListenerKind, given: { host?: string; port?: number } | undefined, port: number): PlannedListener[] =>
    given ? [{ kind, host: given.host ?? DEFAULT_HOST, port: given.port ?? port }] : [];
  return [
    ...planned('api', { ...(options.host !== undefined ? { host: options.host } : {}), ...(options.port !== undefined ? { port: options.port } : {}) }, DEFAULT_PORT),
    ...planned('ingress', options.ingress, DEFAULT_INGRESS_PORT),
    ...planned('ssh', options.ssh, DEFAULT_SSH_PORT),
    ...planned('metrics', options.metricsListen, 0),
  ];
}

/**
 * {@link serve}'s start, logging to `log`: the data directory's lock, then the listeners' check (nothing is
 * set up while an address is taken), then {@link open}. On failure it undoes this start's network set-up
 * ({@link undoNetworkSetUp}; its note, when something stays, ends the error's message), releases the lock and rethrows.
 */
async function start(options: ServeOptions, dataDir: string, log: Pino): Promise<RamifyServer> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await chmod(dataDir, 0o700);
  const logger = adaptLogger(log);
  const snapshotStorage = resolveSnapshotStorage(options.snapshotStorage);
  const database = resolveDatabase(dataDir, options.databaseUrl);
  const role = options.role ?? 'single';
  checkRoleConfig(role, { database, storage: snapshotStorage, advertiseUrl: options.advertiseUrl });

  // Before anything is opened: a second daemon here would share the store and take the first's egress table and NFLOG group.
  const dataDirLock = lockDataDir(dataDir);
  const listeners = plannedListeners(options);
  const prefix = options.network?.prefix ?? 'rmf';
  // Then the network prefix's (network-prefix-lock.ts): a second daemon on it would cut the first one's sandboxes off.
  // The API role and a test's fake network set nothing up on the host.
  const setsUpNetwork = role !== 'api' && !options.overrides?.network;
  let prefixLock: NetworkPrefixLock | null = null;
  try {
    if (setsUpNetwork) prefixLock = lockNetworkPrefix(prefix, dataDir);
  } catch (err) {
    dataDirLock.release();
    throw err;
  }
  const lock: DataDirLock = { path: dataDirLock.path, record: (fields) => dataDirLock.record(fields), release: () => (prefixLock?.release(), dataDirLock.release()) };
  // What of the prefix's network was on the host before this start (undefined: this daemon makes none).
  let before: NetworkFootprint | null | undefined;
  try {
    await checkListeners(listeners);
    if (setsUpNetwork) before = await networkFootprint(prefix);
    return await open({ options, dataDir, log, lock, listeners, prefix, snapshotStorage, database });
  } catch (err) {
    if (before !== undefined) {
      const note = await undoNetworkSetUp(before, { dataDir, prefix, logger });
      if (note !== null && err instanceof Error) err.message = `${err.message.replace(/\.$/, '')}. ${note}`;
    }
    lock.release();
    throw err;
  }
}

/** What {@link start} hands {@link open}: the options, and what it resolved and holds. */
interface OpenContext {
  options: ServeOptions;
  dataDir: string;
  log: Pino;
  lock: ReturnType<typeof lockDataDir>;
  listeners: PlannedListener[];
  prefix: string;
  snapshotStorage: ReturnType<typeof resolveSnapshotStorage>;
  database: ReturnType<typeof resolveDatabase>;
}

/**
 * Compose and start everything with the data directory's lock held. On failure it closes what it opened
 * (the lock stays: {@link start} releases it) and rethrows; a listener's taken address as `ADDRESS_IN_USE`.
 */
async function open(context: OpenContext): Promise<RamifyServer> {
  const { options, dataDir, log, lock, listeners, prefix, snapshotStorage, database } = context;
  const logger = adaptLogger(log);
  const role = options.role ?? 'single';
  const { ingress: ingressOptions, ssh: sshOptions, metricsListen } = options;
  /** The planned listener of `kind` (present whenever its option is). */
  const planned = (kind: ListenerKind): PlannedListener => listeners.find((l) => l.kind === kind) as PlannedListener;
  const composition = await compose({
    // The API role builds no runtime, network or egress enforcement (compose.ts): every call on a sandbox goes to its host.
    role, dataDir, hostId: options.hostId, cacheDir: resolveCacheDir(options.cacheDir), logger, snapshotStorage, store: database, overrides: options.overrides,
    coreOptions: { ...options.coreOptions, ...webhookOptions(options), ...warmPoolOptions(options), ...(role === 'api' ? { warmPool: parseWarmPoolSpec('off') } : {}) },
    maxOutputBytes: options.maxOutputBytes, gvisor: options.gvisor, microvm: options.microvm, runtimes: options.runtimes, network: options.network,
    egress: options.egress,
    clock: options.clock, ...(options.metrics ? { metrics: options.metrics } : {}), ...(options.otlpEndpoint ? { otlpEndpoint: options.otlpEndpoint } : {}),
  });
  const { core } = composition;
  const scheduler = new TimeoutScheduler(core);
  const pruner = new EventPruner(core);
  let metricsListener: MetricsListener | undefined;
  const liveness = new LivenessMonitor(core);
  const autoPause = new AutoPauseScheduler(core);
  const activity = new ActivityPersister(core);
  const usage = new UsageSampler(core);
  let app: FastifyInstance | undefined;
  let ingress: RunningIngress | undefined;
  let ssh: RunningSshGateway | undefined;
  let agent: HostAgent | undefined;
  let sweep: { stop(): Promise<void> } | undefined;
  const api = role === 'api';
  try {
    const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
    const newApiKey = await ensureApiKey({ store: core.store, clock: core.clock, dataDir, print });
    pruner.start();
    // Every role: live streams see every process's events, and any live process delivers pending webhooks.
    await core.eventFeed.start();
    await core.webhooks.start();
    if (api) {
      sweep = startHostSweep(core);
      if (ingressOptions) ingress = await startListener(planned('ingress'), () => startIngressEdge(core, ingressOptions));
      if (sshOptions) ssh = await startListener(planned('ssh'), () => startSshRelay(core, sshOptions, { dataDir }));
    } else {
      if (options.reconcile !== 'skip') await reconcile(core);
      prewarmFreeSlots(core);
      await core.pool.start();
      scheduler.start();
      liveness.start();
      autoPause.start();
      activity.start();
      usage.start();
      if (ingressOptions) ingress = await startListener(planned('ingress'), () => startIngress(core, ingressOptions, { prefix }));
      if (sshOptions) ssh = await startListener(planned('ssh'), () => startSshGateway(core, sshOptions, { dataDir, prefix, placed: role === 'host' }));
    }
    const { metrics } = composition;
    if (metricsListen && metrics) metricsListener = await startListener(planned('metrics'), () => startMetricsListener(metrics, metricsListen, logger));
    const built = await buildApp({ core, loggerInstance: log, metrics: composition.metrics, role, ...(options.otlpTraces ? { traced: options.otlpTraces } : {}) });
    app = built;
    const { host, port } = planned('api');
    const address = await startListener(planned('api'), () => built.listen({ host, port }));
    // After reconcile and once the API answers: placement may send work from the moment it is registered.
    if (role === 'host') agent = await startHostAgent(core, {
      advertiseUrl: options.advertiseUrl as string, ...options.hostLease,
      ...(ingress ? { ingressListen: ingress.address } : {}), ...(ssh ? { sshListen: ssh.address } : {}),
    });
    // What `DATA_DIR_IN_USE` and `ramify serve --detach` tell a user about this daemon (data-dir-lock.ts).
    lock.record({ url: address });
    const identity = { url: address, dataDir, hostId: core.hostId, role };
    logger.info('ramify serving', identity);
    const listening = app;
    return {
      url: address,
      dataDir,
      app: listening,
      core,
      newApiKey,
      ingress: ingress ? { address: ingress.address, url: `${ingress.endpoint.protocol}://<port>-<sandboxId>.${ingress.endpoint.domain}${ingress.endpoint.port === null ? '' : `:${ingress.endpoint.port}`}` } : null,
      ssh: ssh ? { address: ssh.address, host: ssh.endpoint.host, port: ssh.endpoint.port, fingerprint: ssh.fingerprint } : null,
      runtimeSummary: runtimeSummary(core),
      snapshotStorage: describeSnapshotStorage(dataDir, snapshotStorage),
      database: describeDatabase(database),
      metricsAddress: metricsListener?.address ?? null,
      otlpUrl: composition.tracing?.url ?? null,
      role,
      drain: async () => (agent ? agent.drain() : null),
      close: (reason = 'close') => loggedStop(log, { ...identity, reason }, async () => {
        agent?.stop();
        await sweep?.stop();
        await metricsListener?.close();
        await ssh?.close();
        await ingress?.close();
        await listening.close();
        await scheduler.stop();
        await pruner.stop();
        await liveness.stop();
        await autoPause.stop();
        await usage.stop();
        // Last: the ingress and the API have released their holds, so the stored idle clocks are current.
        await activity.stop();
        // Pooled sandboxes belong to no one: they go with the daemon (a crash leaves them to reconcile).
        await core.pool.close();
        // The lock goes last, whatever happens: the next daemon may start as soon as it is free.
        await composition.close().finally(() => lock.release());
      }),
    };
  } catch (err) {
    agent?.stop();
    await sweep?.stop();
    await app?.close().catch(() => undefined);
    await metricsListener?.close().catch(() => undefined);
    await ssh?.close().catch(() => undefined);
    await ingress?.close().catch(() => undefined);
    await scheduler.stop();
    await pruner.stop();
    await liveness.stop();
    await autoPause.stop();
    await usage.stop();
    await activity.stop();
    await core.pool.close();
    await composition.close();
    throw err;
  }
}

/** The webhook options with the destination policy resolved (flag, else core option, else env). @throws RamifyError VALIDATION_FAILED. */
function webhookOptions(options: ServeOptions): Partial<CoreOptions> {
  const given = options.webhookAllowPrivate ?? options.coreOptions?.webhooks?.allowPrivateDestinations;
  return { webhooks: { ...options.coreOptions?.webhooks, allowPrivateDestinations: resolveWebhookAllowPrivate(given) } };
}

/** The core options of `warmPool` and `warmPoolBudgetMB`. @throws RamifyError VALIDATION_FAILED for a bad spec. */
function warmPoolOptions(options: ServeOptions): Partial<CoreOptions> {
  const spec = options.warmPool;
  return {
    ...(spec === undefined ? {} : { warmPool: typeof spec === 'string' ? parseWarmPoolSpec(spec) : spec }),
    warmPoolBudgetMB: options.warmPoolBudgetMB ?? options.coreOptions?.warmPoolBudgetMB ?? defaultWarmPoolBudgetMB(totalmem()),
  };
}

/** What {@link RamifyServer.runtimeSummary} holds. */
export function runtimeSummary(core: Pick<Core, 'runtimes' | 'unavailableRuntimes'>): string[] {
  return [
    ...core.runtimes.map((r) => `${r.name}: ${r.summary ?? 'ready'}`),
    ...Object.entries(core.unavailableRuntimes ?? {}).map(([name, why]) => `${name} unavailable: ${why}`),
  ];
}

/**
 * Run `stop` (everything a daemon releases, its data directory's lock last), then log `ramify stopped` with
 * `fields` (the counterpart of `ramify serving`; a crash or kill -9 writes none), or `ramify stop failed`
 * with the error, which it rethrows.
 */
async function loggedStop(log: Pino, fields: Record<string, unknown>, stop: () => Promise<void>): Promise<void> {
  const logger = adaptLogger(log);
  try {
    await stop();
  } catch (err) {
    logger.error('ramify stop failed', { ...fields, ...errorFields(err) });
    log.flush();
    throw err;
  }
  logger.info('ramify stopped', fields);
  log.flush();
}

/**
 * The log fields of a failure: `code` (a RamifyError's, else the Node error code, else `INTERNAL`), `error`,
 * its message, and a RamifyError's `details` (`ramify serve --detach` rebuilds the error from them).
 */
function errorFields(err: unknown): { code: string; error: string; details?: Record<string, unknown> } {
  const code = (err as { code?: unknown } | null)?.code;
  const details = isRamifyError(err) ? err.details : undefined;
  return { code: typeof code === 'string' ? code : 'INTERNAL', error: err instanceof Error ? err.message : String(err), ...(details ? { details } : {}) };
}

/** Core's Logger over pino. */
export function adaptLogger(log: Pino): Logger {
  return {
    info: (message, fields) => log.info(fields ?? {}, message),
    debug: (message, fields) => log.debug(fields ?? {}, message),
    warn: (message, fields) => log.warn(fields ?? {}, message),
    error: (message, fields) => log.error(fields ?? {}, message),
  };
}
