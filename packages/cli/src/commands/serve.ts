/** `ramify serve`: run the daemon in this process until SIGINT/SIGTERM. */
import { spawn } from 'node:child_process';
import { chmodSync, closeSync, fstatSync, mkdirSync, openSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { DEFAULT_MAX_OUTPUT_BYTES, ERROR_CODES, MAX_OUTPUT_BYTES_CEILING, type ErrorCode } from '@ramify/contracts/client';
import { getHealth, RamifyError } from '@ramify/sdk';
import { action, type CliEnv } from '../context.js';
import { intIn, parseDuration } from '../parse.js';

/** The part of `@ramify/daemon` this command uses (imported dynamically so the CLI builds without it). */
interface DaemonModule {
  serve(options: {
    role?: 'single' | 'api' | 'host'; advertiseUrl?: string;
    host?: string; port?: number; dataDir?: string; hostId?: string; logLevel?: string; maxOutputBytes?: number; microvm?: { imageMemoryMB?: number };
    ingress?: { host?: string; port?: number; domain?: string; tls?: { certFile: string; keyFile: string }; publicPort?: number; publicProtocol?: 'http' | 'https' };
    ssh?: { host?: string; port?: number }; warmPool?: string; warmPoolBudgetMB?: number;
    snapshotStorage?: { s3Endpoint?: string; s3Bucket?: string; s3Region?: string; s3Prefix?: string; s3PathStyle?: boolean; snapshotCacheBytes?: number };
    metricsListen?: { host: string; port: number }; otlpEndpoint?: string; otlpTraces?: 'writes' | 'all'; coreOptions?: { eventRetentionMs?: number; usageSampleMs?: number }; databaseUrl?: string;
    webhookAllowPrivate?: boolean; logStartFailure?: boolean;
  }): Promise<{
    metricsAddress: string | null; otlpUrl: string | null;
    url: string; dataDir: string; runtimeSummary: string[]; snapshotStorage: string; database: string; ingress: { address: string; url: string } | null;
    core: { pool: { stats(): { mode: string; budgetMB: number } }; hostId: string };
    ssh: { address: string; host: string; port: number; fingerprint: string } | null; close(reason?: 'SIGTERM' | 'SIGINT' | 'close'): Promise<void>;
    role: string; drain(): Promise<{ paused: string[]; failed: string[]; uploadsDone: boolean } | null>;
  }>;
  resetNetwork(options: { dataDir: string; prefix: string }): Promise<{ prefix: string; namespaces: number }>;
}

/** The process holding a data directory (`DataDirHolder` of `@ramify/daemon/data-dir-lock`). */
interface DataDirHolder {
  dataDir: string;
  pid: number | null;
  startedAt: string | null;
  url: string | null;
  program: string | null;
}

/** What `ramify serve --detach` uses of `@ramify/daemon/data-dir-lock`: the light entry that names who holds a data directory. */
interface DataDirLockModule {
  /** @throws the file system's error when the lock file exists but cannot be opened. */
  dataDirHolder(dataDir: string): DataDirHolder | null;
  /** The daemon's own `DATA_DIR_IN_USE` error for `holder`. */
  dataDirInUse(holder: DataDirHolder): Error;
  describeHolder(holder: DataDirHolder): string;
  stopHint(holder: DataDirHolder): string;
}

/** The process listening on a port (`PortListener` of `@ramify/daemon/listen-check`). */
interface PortListener {
  pid: number;
  program: string | null;
  holder: DataDirHolder | null;
}

/** What `ramify serve --detach` uses of `@ramify/daemon/listen-check`: who listens on a port (light: no daemon loaded). */
interface ListenCheckModule {
  /** The process listening on TCP `port` (`ss -ltnp`) and the data directory it holds; null when none can be named. */
  portListener(port: number): Promise<PortListener | null>;
  /** That process, for a message (`pid 1234, API ..., data directory D; to stop it: ...`). */
  describePortListener(listener: PortListener | null): string;
}

const loadDaemon = (): Promise<DaemonModule> => loadDaemonEntry<DaemonModule>('@ramify/daemon');

/**
 * Import an entry of `@ramify/daemon` (dynamically: the CLI builds and runs without it).
 * @throws RamifyError RUNTIME_UNAVAILABLE when the package is not installed or not built.
 */
async function loadDaemonEntry<T>(specifier: string): Promise<T> {
  try {
    return (await import(specifier)) as T;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new RamifyError('RUNTIME_UNAVAILABLE', `the daemon package ${specifier} is not installed or not built (${err instanceof Error ? err.message : String(err)})`);
    }
    throw err;
  }
}

/** The flags of `ramify serve` (also passed on to a detached daemon). */
interface ServeFlags {
  /** `--role single|api|host` (docs/design/SCALE-OUT.md). */
  role?: 'single' | 'api' | 'host';
  /** `--advertise-url`: where API processes reach this host (host role). */
  advertiseUrl?: string;
  host?: string;
  port?: number;
  dataDir?: string;
  /** `--network-prefix`: name prefix of the daemon's namespaces, veths and nftables table (1-4 lowercase letters). */
  networkPrefix?: string;
  /** `--host-id`: this host's id, stored in the data directory the first time. */
  hostId?: string;
  logLevel?: string;
  /** `--microvm-memory`: RAM (MiB) microVM template images are booted with. */
  microvmMemory?: number;
  /** `--max-output-bytes`: per-stream limit of command results, bytes. */
  maxOutputBytes?: number;
  /** `--ingress-listen ADDR:PORT` or `off`. */
  ingressListen?: string;
  ingressDomain?: string;
  ingressTlsCert?: string;
  ingressTlsKey?: string;
  /** `--ingress-public-port`, `--ingress-public-protocol`: what port URLs name when it is not this listener (a host behind an API's ingress edge). */
  ingressPublicPort?: number;
  ingressPublicProtocol?: 'http' | 'https';
  /** `--ssh-listen ADDR:PORT` or `off`. */
  sshListen?: string;
  /** `--database-url`: Postgres for state (else $RAMIFY_DATABASE_URL, else SQLite in the data directory). */
  databaseUrl?: string;
  s3Endpoint?: string;
  s3Bucket?: string;
  s3Region?: string;
  s3Prefix?: string;
  s3PathStyle?: boolean;
  /** `--snapshot-cache-bytes`: local cache budget of durable snapshots, bytes. */
  snapshotCacheBytes?: number;
  /** `--warm-pool auto|off|<template>[:<runtime>]=<n>,...`. */
  warmPool?: string;
  /** `--warm-pool-budget <MB>`. */
  warmPoolBudget?: number;
  /** `--metrics-listen ADDR:PORT`: GET /metrics without auth there (default none). */
  metricsListen?: string;
  /** `--otlp-endpoint URL`: export traces over OTLP/HTTP. */
  otlpEndpoint?: string;
  /** `--otlp-traces writes|all`: which API calls are traces. */
  otlpTraces?: 'writes' | 'all';
  /** `--events-retention DURATION`, ms. */
  eventsRetention?: number;
  /** `--usage-sample`: ms between usage samples; 0 (`off`) turns metering off. */
  usageSample?: number;
  /** `--webhook-allow-private`: webhooks may reach loopback/private addresses (else $RAMIFY_WEBHOOK_ALLOW_PRIVATE; default public only). */
  webhookAllowPrivate?: boolean;
}

/** The snapshot storage flags given (the daemon fills in the rest from `RAMIFY_S3_*`). */
function snapshotStorageFlags(opts: ServeFlags): NonNullable<Parameters<DaemonModule['serve']>[0]['snapshotStorage']> {
  const { s3Endpoint, s3Bucket, s3Region, s3Prefix, s3PathStyle, snapshotCacheBytes } = opts;
  return Object.fromEntries(Object.entries({ s3Endpoint, s3Bucket, s3Region, s3Prefix, s3PathStyle, snapshotCacheBytes }).filter(([, value]) => value !== undefined));
}

/** Default `--ingress-listen`: loopback only. */
const DEFAULT_INGRESS_LISTEN = '127.0.0.1:7424';
/** Default `--ssh-listen`: loopback only. */
const DEFAULT_SSH_LISTEN = '127.0.0.1:2222';

/**
 * `ADDR:PORT` (`[v6]:PORT` too) of a `--*-listen` flag.
 * @throws RamifyError VALIDATION_FAILED naming `flag` otherwise.
 */
function listenAddress(flag: string, value: string, example: string): { host: string; port: number } {
  const m = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(value);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) throw new RamifyError('VALIDATION_FAILED', `${flag} '${value}' is not ADDR:PORT (e.g. ${example}) or 'off'`);
  return { host: m[1] as string, port };
}

/**
 * The ingress options of `ramify serve`'s flags; null for `--ingress-listen off`.
 * @throws RamifyError VALIDATION_FAILED for a listen address that is not ADDR:PORT, or a TLS file without the other.
 */
function ingressOptions(opts: ServeFlags): { host: string; port: number; domain?: string; tls?: { certFile: string; keyFile: string }; publicPort?: number; publicProtocol?: 'http' | 'https' } | null {
  const listen = opts.ingressListen ?? DEFAULT_INGRESS_LISTEN;
  if (listen === 'off') return null;
  const { host, port } = listenAddress('--ingress-listen', listen, '127.0.0.1:7424, 0.0.0.0:443');
  if ((opts.ingressTlsCert === undefined) !== (opts.ingressTlsKey === undefined)) throw new RamifyError('VALIDATION_FAILED', '--ingress-tls-cert and --ingress-tls-key go together');
  return {
    host, port,
    ...(opts.ingressDomain ? { domain: opts.ingressDomain } : {}),
    ...(opts.ingressTlsCert && opts.ingressTlsKey ? { tls: { certFile: opts.ingressTlsCert, keyFile: opts.ingressTlsKey } } : {}),
    ...(opts.ingressPublicPort !== undefined ? { publicPort: opts.ingressPublicPort } : {}),
    ...(opts.ingressPublicProtocol ? { publicProtocol: opts.ingressPublicProtocol } : {}),
  };
}

/** The SSH gateway options of `ramify serve`'s flags; null for `--ssh-listen off`. @throws RamifyError VALIDATION_FAILED. */
function sshOptions(opts: ServeFlags): { host: string; port: number } | null {
  const listen = opts.sshListen ?? DEFAULT_SSH_LISTEN;
  return listen === 'off' ? null : listenAddress('--ssh-listen', listen, '127.0.0.1:2222, 0.0.0.0:22');
}

/** `--events-retention`: a duration from 1 h to 365 d. */
function retentionArg(value: string): number {
  const ms = parseDuration(value);
  if (ms < 3_600_000 || ms > 365 * 86_400_000) throw new InvalidArgumentError('expected a duration from 1h to 365d');
  return ms;
}

/** `--otlp-endpoint`: an http(s) URL. @throws RamifyError VALIDATION_FAILED otherwise. */
function otlpUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol === 'http:' || url.protocol === 'https:') return value;
  } catch {
    /* refused below */
  }
  throw new RamifyError('VALIDATION_FAILED', `--otlp-endpoint '${value}' is not an http:// or https:// URL (e.g. http://127.0.0.1:4318)`);
}

/** `--network-prefix`: 1-4 lowercase letters (the kernel's 15-byte interface names leave that much). */
function networkPrefix(value: string): string {
  if (!/^[a-z]{1,4}$/.test(value)) throw new InvalidArgumentError(`'${value}' is not 1-4 lowercase letters (e.g. rmf, rmb)`);
  return value;
}

/**
 * Whether this process's stderr is a regular file (a log: `--detach`'s serve.log, `2>>serve.log`), where
 * the daemon's `ramify failed to start` line belongs beside this command's error (`--detach` reads it
 * back, {@link startFailure}); a terminal, pipe or socket (journald) gets the error once, in words.
 */
function stderrIsFile(): boolean {
  try {
    return fstatSync(2).isFile();
  } catch {
    return false;
  }
}

/** Register `serve` on `program`. */
export function registerServe(program: Command, env: CliEnv): void {
  program.command('serve').description('run the Ramify daemon (API, runtimes, networking) until interrupted')
    .addOption(new Option('--role <role>', "single (default: everything in this process), api (no runtimes: serves the shared store, places creates and forwards calls on sandboxes to their hosts) or host (runtimes and networking; registers with the API processes through the database, heartbeats, drains on SIGTERM). api and host need --database-url and --s3-bucket").choices(['single', 'api', 'host']))
    .option('--advertise-url <url>', 'with --role host: where API processes reach this host\'s API listener, e.g. http://10.0.0.5:7423')
    .option('--host <host>', 'address to listen on (default 127.0.0.1: loopback only)')
    .option('--port <port>', 'port to listen on (default 7423; 0 picks a free one)', intIn(0, 65535))
    .option('--data-dir <dir>', 'data directory (default $RAMIFY_HOME, else /var/lib/ramify); one daemon per data directory: a second one exits at once with DATA_DIR_IN_USE naming the daemon that holds it (pid, API, program) and how to stop it')
    .option('--network-prefix <prefix>', "name prefix of this daemon's network namespaces, veths and nftables table, 1-4 lowercase letters (default 'rmf'); give a second daemon on the same host its own data directory and prefix", networkPrefix)
    .option('--host-id <id>', "this host's id, recorded on the sandboxes and snapshots it holds (lowercase letters, digits, '-'); kept in the data directory: default the kept one, else a generated host-<12 hex>. A data directory keeps its id")
    .addOption(new Option('--log-level <level>', 'daemon log level (JSON log on stderr)').choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']))
    .option('--reset-network', "remove this daemon's network set-up left for its next start (namespaces <prefix>-*, their veths, the prefix's nftables tables and ip rules) and exit without serving; refused while the daemon runs or a sandbox of its data directory still runs (paused ones are fine)")
    .option('--detach', 'run in the background (log: <data-dir>/serve.log); returns once the API answers, or at once, naming it (pid, data directory, program), if a daemon already answers there')
    .option('--microvm-memory <MB>', 'RAM microVM template images are booted with (default 1024): the most memoryMB a microVM sandbox can have; rebuild templates after changing it', intIn(128, 65536))
    .option('--max-output-bytes <bytes>', `bytes of each stream a command result keeps, the head (default ${DEFAULT_MAX_OUTPUT_BYTES}, 32 MiB; at most ${MAX_OUTPUT_BYTES_CEILING}); results say when they were cut, streams are never cut`, intIn(0, MAX_OUTPUT_BYTES_CEILING))
    .option('--ingress-listen <addr:port>', `where port URLs are served (default ${DEFAULT_INGRESS_LISTEN}: loopback only; 'off' for none; with --role api: the cluster's ingress edge, proxying each port URL to its sandbox's host)`)
    .option('--ingress-domain <domain>', "domain of port URLs, http://<port>-<sandboxId>.<domain>:<port>/ (default 'localhost': *.localhost resolves to loopback in curl and browsers)")
    .option('--ingress-tls-cert <file>', 'PEM certificate (a wildcard *.<domain>) to serve port URLs over HTTPS, with --ingress-tls-key')
    .option('--ingress-tls-key <file>', 'PEM key of --ingress-tls-cert')
    .option('--ingress-public-port <port>', 'the port port URLs name when it is not --ingress-listen\'s: behind a load balancer, or on a host behind an API process\'s ingress edge (give it the edge\'s port and --ingress-domain)', intIn(1, 65535))
    .addOption(new Option('--ingress-public-protocol <protocol>', 'the protocol port URLs name when it is not the listener\'s: https on a host behind an edge that serves TLS').choices(['http', 'https']))
    .option('--warm-pool <spec>', "idle sandboxes kept restored so that a create claims one (tens of ms) instead of restoring: 'auto' (default: one per template created from in the last hour), 'off', or sizes per template 'base=2,python-tests=1' (':microvm' after a name for that runtime)", warmPoolSpec)
    .option('--warm-pool-budget <MB>', 'most memoryMB the warm pool\'s idle sandboxes may add up to (default 1/16 of the host\'s memory, 512 to 4096)', intIn(0, 1 << 20))
    .option('--ssh-listen <addr:port>', `where the SSH gateway listens: ssh -p PORT <sandboxId>@ADDR (default ${DEFAULT_SSH_LISTEN}: loopback only; 'off' for none); its host key is made once in the data directory. With --role api it serves every sandbox of the cluster, relaying to the sandbox's host (API processes behind one load balancer: copy one ssh_host_ed25519_key into each data directory)`)
    .option('--database-url <url>', 'keep state in Postgres, e.g. postgres://ramify:secret@db.internal:5432/ramify (default $RAMIFY_DATABASE_URL; none: SQLite in the data directory). Several daemons may share one database; it is migrated at start')
    .option('--s3-bucket <bucket>', 'keep snapshots in this S3-compatible bucket, the local disk as a cache (default $RAMIFY_S3_BUCKET; none: local disk only). Credentials: $RAMIFY_S3_ACCESS_KEY_ID and $RAMIFY_S3_SECRET_ACCESS_KEY, else the AWS SDK\'s default chain')
    .option('--s3-endpoint <url>', 'S3-compatible endpoint, e.g. http://127.0.0.1:9000 for MinIO or https://<account>.r2.cloudflarestorage.com (default $RAMIFY_S3_ENDPOINT, else AWS)')
    .option('--s3-region <region>', 'bucket region (default $RAMIFY_S3_REGION, else $AWS_REGION, else us-east-1; R2: auto)')
    .option('--s3-prefix <prefix>', 'key prefix inside the bucket (default $RAMIFY_S3_PREFIX, else none)')
    .option('--s3-path-style', 'path-style bucket URLs, as MinIO and s3rver need (default $RAMIFY_S3_PATH_STYLE=1)')
    .option('--snapshot-cache-bytes <bytes>', 'with S3: bytes of uploaded snapshots kept on local disk; the least recently used beyond it are evicted and downloaded again when needed (default $RAMIFY_SNAPSHOT_CACHE_BYTES, else no limit)', intIn(0, Number.MAX_SAFE_INTEGER))
    .option('--metrics-listen <addr:port>', "also serve Prometheus metrics at http://ADDR:PORT/metrics WITHOUT auth, for a scraper (default off; GET /metrics on the API takes an admin key of the default team)")
    .option('--otlp-endpoint <url>', 'export traces over OTLP/HTTP (JSON) to this collector, e.g. http://127.0.0.1:4318 (spans go to /v1/traces there); default off')
    .addOption(new Option('--otlp-traces <calls>', "which API calls are traces: 'writes' (default: the calls that change something; a client polling GET /v1/sandboxes/ID makes none) or 'all' (reads too)").choices(['writes', 'all']))
    .option('--events-retention <duration>', 'how long events, webhook deliveries and the command log are kept, e.g. 7d (1h to 365d; default 7d)', retentionArg)
    .option('--usage-sample <duration>', "how often each running sandbox's CPU, memory, disk and traffic are read, metered and checked against budgets (default 5s); 'off' turns metering, live metrics and budget enforcement off", (v: string) => (v === 'off' ? 0 : parseDuration(v)))
    .option('--webhook-allow-private', "let webhooks reach loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), carrier-grade NAT and this host's own addresses, for receivers on your own network (link-local 169.254/16 and fe80::/10, and cloud metadata endpoints, stay refused); every team's admins get it (default $RAMIFY_WEBHOOK_ALLOW_PRIVATE, else off: public addresses only, checked on every address a URL's host resolves to at each delivery)")
    .action(action(env, async (ctx, opts: ServeFlags & { detach?: boolean; resetNetwork?: boolean }) => {
      if (opts.resetNetwork) {
        const reset = await (await loadDaemon()).resetNetwork({ dataDir: opts.dataDir ?? (process.env.RAMIFY_HOME || '/var/lib/ramify'), prefix: opts.networkPrefix ?? 'rmf' });
        ctx.output(reset, () => `ramify: removed the network set-up of prefix '${reset.prefix}' (${reset.namespaces} namespaces, its veths, tables and ip rules)`);
        return;
      }
      if (opts.detach) {
        const detached = await serveDetached(opts);
        const { url } = detached;
        const dataDir = opts.dataDir ?? (process.env.RAMIFY_HOME || '/var/lib/ramify');
        ctx.note(detached.started
          ? `ramify: serving ${url} in the background (log: ${join(dataDir, 'serve.log')}; API key file: ${join(dataDir, 'api-key')})`
          : detached.running);
        if (detached.started) for (const line of await runtimeLines(url)) ctx.note(`ramify: runtime ${line}`);
        return;
      }
      const { serve } = await loadDaemon();
      const microvm = opts.microvmMemory !== undefined ? { imageMemoryMB: opts.microvmMemory } : undefined;
      const ingress = ingressOptions(opts);
      const ssh = sshOptions(opts);
      const metricsListen = opts.metricsListen === undefined || opts.metricsListen === 'off' ? undefined : listenAddress('--metrics-listen', opts.metricsListen, '127.0.0.1:9464');
      const otlpEndpoint = opts.otlpEndpoint === undefined ? undefined : otlpUrl(opts.otlpEndpoint);
      const server = await serve({
        ...(opts.role ? { role: opts.role } : {}), ...(opts.advertiseUrl ? { advertiseUrl: opts.advertiseUrl } : {}),
        // A failed start is reported once: this command prints it (context.ts), the log line only goes to a log file.
        logStartFailure: stderrIsFile(),
        host: opts.host, port: opts.port, dataDir: opts.dataDir, ...(opts.hostId ? { hostId: opts.hostId } : {}), logLevel: opts.logLevel, maxOutputBytes: opts.maxOutputBytes, microvm, ...(ingress ? { ingress } : {}), ...(ssh ? { ssh } : {}),
        ...(opts.networkPrefix ? { network: { prefix: opts.networkPrefix } } : {}),
        warmPool: opts.warmPool ?? 'auto', warmPoolBudgetMB: opts.warmPoolBudget, snapshotStorage: snapshotStorageFlags(opts),
        ...(opts.databaseUrl ? { databaseUrl: opts.databaseUrl } : {}), ...(opts.webhookAllowPrivate ? { webhookAllowPrivate: true } : {}),
        ...(metricsListen ? { metricsListen } : {}), ...(otlpEndpoint ? { otlpEndpoint } : {}), ...(opts.otlpTraces ? { otlpTraces: opts.otlpTraces } : {}),
        coreOptions: {
          ...(opts.eventsRetention !== undefined ? { eventRetentionMs: opts.eventsRetention } : {}),
          ...(opts.usageSample !== undefined ? { usageSampleMs: opts.usageSample } : {}),
        },
      });
      ctx.note(`ramify: serving ${server.url} (data ${server.dataDir}); Ctrl-C stops the daemon (sandboxes keep running)`);
      ctx.note(`ramify: state in ${server.database}`);
      ctx.note(`ramify: snapshots in ${server.snapshotStorage}`);
      if (server.ingress) ctx.note(`ramify: port URLs ${server.ingress.url} (listening on ${server.ingress.address})`);
      if (server.ssh) ctx.note(`ramify: ssh -p ${server.ssh.port} <sandboxId>@${server.ssh.host} (listening on ${server.ssh.address}; host key ${server.ssh.fingerprint})`);
      if (server.metricsAddress) ctx.note(`ramify: metrics at http://${server.metricsAddress}/metrics (no auth)`);
      if (server.otlpUrl) ctx.note(`ramify: exporting traces to ${server.otlpUrl}`);
      for (const line of server.runtimeSummary) ctx.note(`ramify: runtime ${line}`);
      ctx.note(`ramify: ${warmPoolLine(server.core.pool.stats())}`);
      if (server.role !== 'single') ctx.note(`ramify: role ${server.role}${server.role === 'host' ? ` (host id ${server.core.hostId}; SIGTERM drains: pauses its sandboxes, waits for their uploads)` : ''}`);
      const signal = await new Promise<NodeJS.Signals>((resolve) => {
        const stop = (received: NodeJS.Signals): void => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          resolve(received);
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
      if (signal === 'SIGTERM' && server.role === 'host') {
        ctx.note('ramify: draining (placement skips this host; pausing its sandboxes; waiting for uploads)');
        const drained = await server.drain();
        if (drained) ctx.note(`ramify: drained: ${drained.paused.length} paused, ${drained.failed.length} could not be paused, uploads ${drained.uploadsDone ? 'done' : 'NOT done (their sandboxes resume only here)'}`);
      }
      await server.close(signal === 'SIGINT' ? 'SIGINT' : 'SIGTERM');
    }));
}

/**
 * Start `ramify serve` as a detached background process with its output appended to
 * `<data-dir>/serve.log`, and wait (up to 180 s: a first start may fetch the microVM guest kernel) until `GET /v1/health` answers.
 * The log is mode 0600: the first start prints the API key into it.
 * @returns the API URL and whether a daemon was started; when one already answered, `running`: the line
 *   naming it (see {@link runningDaemon}).
 * @throws RamifyError DATA_DIR_IN_USE (the daemon's own error, naming the holder) when another daemon holds the
 *   data directory; the daemon's own error when its start failed with one (its `ramify failed to start` log
 *   line: ADDRESS_IN_USE, DATABASE_UNAVAILABLE, ...); else RUNTIME_UNAVAILABLE with the log's tail.
 */
async function serveDetached(opts: ServeFlags): Promise<{ url: string; started: true } | { url: string; started: false; running: string }> {
  const host = opts.host ?? '127.0.0.1';
  const port = opts.port ?? 7423;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const dataDir = opts.dataDir ?? (process.env.RAMIFY_HOME || '/var/lib/ramify');
  const locks = await loadDaemonEntry<DataDirLockModule>('@ramify/daemon/data-dir-lock');
  if (port !== 0 && (await healthy(url))) return { url, started: false, running: await runningDaemon(locks, url, port, dataDir) };
  // The child would stop at once with DATA_DIR_IN_USE into serve.log; say it here, as a foreground `ramify serve` does.
  const holder = locks.dataDirHolder(dataDir);
  if (holder) throw locks.dataDirInUse(holder);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const logPath = join(dataDir, 'serve.log');
  const log = openSync(logPath, 'a', 0o600);
  chmodSync(logPath, 0o600);
  // Where this start's lines begin: the log is appended to by every start.
  const logStart = statSync(logPath).size;
  const args = [process.argv[1]!, 'serve'];
  if (opts.role) args.push('--role', opts.role);
  if (opts.advertiseUrl) args.push('--advertise-url', opts.advertiseUrl);
  if (opts.host) args.push('--host', opts.host);
  if (opts.port !== undefined) args.push('--port', String(opts.port));
  if (opts.dataDir) args.push('--data-dir', opts.dataDir);
  if (opts.networkPrefix) args.push('--network-prefix', opts.networkPrefix);
  if (opts.hostId) args.push('--host-id', opts.hostId);
  if (opts.logLevel) args.push('--log-level', opts.logLevel);
  if (opts.microvmMemory !== undefined) args.push('--microvm-memory', String(opts.microvmMemory));
  if (opts.maxOutputBytes !== undefined) args.push('--max-output-bytes', String(opts.maxOutputBytes));
  if (opts.ingressListen) args.push('--ingress-listen', opts.ingressListen);
  if (opts.ingressDomain) args.push('--ingress-domain', opts.ingressDomain);
  if (opts.ingressTlsCert) args.push('--ingress-tls-cert', opts.ingressTlsCert);
  if (opts.ingressTlsKey) args.push('--ingress-tls-key', opts.ingressTlsKey);
  if (opts.ingressPublicPort !== undefined) args.push('--ingress-public-port', String(opts.ingressPublicPort));
  if (opts.ingressPublicProtocol) args.push('--ingress-public-protocol', opts.ingressPublicProtocol);
  if (opts.sshListen) args.push('--ssh-listen', opts.sshListen);
  if (opts.s3Bucket) args.push('--s3-bucket', opts.s3Bucket);
  if (opts.s3Endpoint) args.push('--s3-endpoint', opts.s3Endpoint);
  if (opts.s3Region) args.push('--s3-region', opts.s3Region);
  if (opts.s3Prefix) args.push('--s3-prefix', opts.s3Prefix);
  if (opts.s3PathStyle) args.push('--s3-path-style');
  if (opts.snapshotCacheBytes !== undefined) args.push('--snapshot-cache-bytes', String(opts.snapshotCacheBytes));
  if (opts.warmPool) args.push('--warm-pool', opts.warmPool);
  if (opts.warmPoolBudget !== undefined) args.push('--warm-pool-budget', String(opts.warmPoolBudget));
  if (opts.metricsListen) args.push('--metrics-listen', opts.metricsListen);
  if (opts.otlpEndpoint) args.push('--otlp-endpoint', opts.otlpEndpoint);
  if (opts.otlpTraces) args.push('--otlp-traces', opts.otlpTraces);
  if (opts.eventsRetention !== undefined) args.push('--events-retention', `${opts.eventsRetention}ms`);
  if (opts.webhookAllowPrivate) args.push('--webhook-allow-private');
  if (opts.usageSample !== undefined) args.push('--usage-sample', opts.usageSample === 0 ? 'off' : `${opts.usageSample}ms`);
  // The database URL may carry a password: it goes in the child's environment, not its argv (ps shows argv).
  const env = opts.databaseUrl ? { ...process.env, RAMIFY_DATABASE_URL: opts.databaseUrl } : process.env;
  const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', log, log], env });
  child.unref();
  closeSync(log);
  let exited = false;
  child.once('exit', () => (exited = true));
  for (let waited = 0; waited < 180_000 && !exited; waited += 250) {
    // With --port 0 the address is the daemon's choice: it writes it into daemon.lock once it listens (the
    // lock is this child's: no daemon held the directory above).
    const at = port === 0 ? (locks.dataDirHolder(dataDir)?.url ?? null) : url;
    if (at !== null && (await healthy(at))) return { url: at, started: true };
    await new Promise((r) => setTimeout(r, 250));
  }
  const lines = readFileSync(logPath).subarray(logStart).toString('utf8').trim().split('\n');
  const failed = exited ? startFailure(lines) : null;
  // The daemon's own error (ADDRESS_IN_USE, DATABASE_UNAVAILABLE, ...), as a foreground `ramify serve` says it.
  if (failed && failed.code in ERROR_CODES) throw new RamifyError(failed.code as ErrorCode, failed.error, failed.details);
  const where = port === 0 ? `on a free port of ${host}` : `at ${url}`;
  const why = failed ? `: ${failed.code}: ${failed.error}` : exited ? ' (it exited)' : ' within 180 s (it still runs)';
  throw new RamifyError('RUNTIME_UNAVAILABLE', `the daemon did not come up ${where}${why}; last lines of ${logPath}:\n${lines.slice(-8).join('\n')}`);
}

/** The daemon's `ramify failed to start` log line among `lines` (serve.ts in `@ramify/daemon`): its code, message and details; null when none. */
function startFailure(lines: string[]): { code: string; error: string; details?: Record<string, unknown> } | null {
  for (const line of [...lines].reverse()) {
    if (!line.startsWith('{')) continue;
    try {
      const entry = JSON.parse(line) as { msg?: unknown; code?: unknown; error?: unknown; details?: unknown };
      if (entry.msg !== 'ramify failed to start' || typeof entry.code !== 'string' || typeof entry.error !== 'string') continue;
      const details = typeof entry.details === 'object' && entry.details !== null ? (entry.details as Record<string, unknown>) : undefined;
      return { code: entry.code, error: entry.error, ...(details ? { details } : {}) };
    } catch {
      /* not a log line */
    }
  }
  return null;
}

/** `parseWarmPoolSpec` of `@ramify/contracts`, whose zod schemas only `ramify serve` needs (see {@link loadServeDefinitions}). */
let parseWarmPoolSpec: typeof import('@ramify/contracts').parseWarmPoolSpec | undefined;

/**
 * Load what commander needs to parse `ramify serve`'s options (the `--warm-pool` parser, from
 * `@ramify/contracts` and its zod schemas); `loadDefinitionsFor` (program.ts) calls it before parsing.
 */
export async function loadServeDefinitions(): Promise<void> {
  parseWarmPoolSpec ??= (await import('@ramify/contracts')).parseWarmPoolSpec;
}

/** Commander's parser of `--warm-pool`: the spec as given, once it parses. @throws InvalidArgumentError (usage error, exit 2). */
function warmPoolSpec(value: string): string {
  if (!parseWarmPoolSpec) throw new Error('ramify serve --warm-pool: its parser was not loaded (call loadDefinitionsFor first)');
  try {
    parseWarmPoolSpec(value);
  } catch (err) {
    throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
  }
  return value;
}

/** `warm pool auto (budget 1536 MB; --warm-pool off turns it off)`: what `ramify serve` says of its pool at start. */
function warmPoolLine(stats: { mode: string; budgetMB: number }): string {
  if (stats.mode === 'off') return 'warm pool off (creates restore; --warm-pool auto turns it on)';
  const what = stats.mode === 'auto' ? 'auto: one idle sandbox per template created from in the last hour' : 'fixed sizes';
  return `warm pool ${what}, within ${stats.budgetMB} MB of memoryMB (--warm-pool off turns it off; GET /v1/health shows hits and misses)`;
}

/** The daemon's runtime summary lines, from `GET /v1/health` (empty when it cannot be read). */
async function runtimeLines(url: string): Promise<string[]> {
  try {
    const health = await getHealth({ apiUrl: url, requestTimeoutMs: 2000 });
    return [
      ...Object.entries(health.runtimeInfo).map(([name, info]) => `${name}: ${info}`),
      ...Object.entries(health.unavailableRuntimes).map(([name, why]) => `${name} unavailable: ${why}`),
    ];
  } catch {
    return [];
  }
}

/**
 * The note of `ramify serve --detach` when a daemon already answers at `url`: which one it is. The holder of
 * `dataDir` when it listens on `port` (pid, API, program, start time, how to stop it); else the process
 * listening on `port` (`ss -ltnp`) and the data directory whose lock it holds open, so that a user with two
 * clones sees whose daemon it is.
 */
async function runningDaemon(locks: DataDirLockModule, url: string, port: number, dataDir: string): Promise<string> {
  const holder = locks.dataDirHolder(dataDir);
  if (holder && holder.url !== null && portOf(holder.url) === port) {
    return `ramify: a daemon already answers at ${url}: ${locks.describeHolder(holder)}, data directory ${holder.dataDir}; nothing started. To stop it: ${locks.stopHint(holder)}`;
  }
  const ours = holder ? `data directory ${holder.dataDir} is held by another daemon (${locks.describeHolder(holder)})` : `no daemon holds data directory ${dataDir}`;
  const listeners = await loadDaemonEntry<ListenCheckModule>('@ramify/daemon/listen-check');
  const which = listeners.describePortListener(await listeners.portListener(port));
  return `ramify: a daemon already answers at ${url}, but not this data directory's: ${ours}; nothing started. The one at ${url}: ${which}. For a daemon of your own, give it its own --port (and --data-dir, --network-prefix, --ingress-listen, --ssh-listen)`;
}

/** The port of a URL (`http://127.0.0.1:7423` -> 7423); null when it names none. */
function portOf(url: string): number | null {
  try {
    const { port } = new URL(url);
    return port === '' ? null : Number(port);
  } catch {
    return null;
  }
}

async function healthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/v1/health`, { signal: AbortSignal.timeout(1000) });
    return res.ok;
  } catch {
    return false;
  }
}
