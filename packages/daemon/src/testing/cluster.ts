/**
 * A real multi-host Ramify on one machine, for tests and benches: a throwaway Postgres and an s3rver on
 * the LAN's service address ({@link createHostLan}), template `base` seeded into both
 * ({@link seedTemplate}), and N host daemons, each `node packages/cli/dist/main.js serve` in its own
 * network namespace with its own address, data directory (hence runsc state), network prefix and host
 * id, sharing only Postgres and S3. Their flags come from {@link hostArgs}:
 * - `plain`: each host is a whole `ramify serve` (API and runtimes) on the shared database; callers talk
 *   to a host's API directly (core acts only on its own host's rows);
 * - `roles`: hosts run `--role host --advertise-url`, and one `--role api` process in the root namespace
 *   forwards to them (see issue 16), and serves port URLs as the cluster's ingress edge on
 *   127.0.0.1:`edgePort` (hosts name it in their URLs: `--ingress-public-port`).
 * `close()` kills every sandbox, stops every process and removes every namespace, veth, table and
 * directory; `leftovers()` says what remains (empty after a clean close). As root. Test support only.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalS3Server, S3RVER_CREDENTIALS, type LocalS3Server } from '@ramify/storage/testsuite';
import { S3ChunkStore } from '@ramify/storage';
import { openStore } from '@ramify/store';
import { startPostgresCluster, type PostgresCluster } from '@ramify/store/testsuite';
import { apiCaller, realRuntimeSkip, type ApiReply } from '../real-test-support.js';
import { CLI_MAIN, freePort, startDaemonProcess, type DaemonProcess } from './daemon-process.js';
import { forgetHostNamespaces, hostLeftovers, processesNaming, sweepHost } from './host-leftovers.js';
import { createHostLan, ip, lanLeftovers, type HostLan, type LanHost } from './host-lan.js';
import { seedTemplate } from './template-seed.js';

/** How the processes are split (see the module comment). */
export type ClusterMode = 'plain' | 'roles';

export interface ClusterOptions {
  /** Name prefix of everything made (1-3 lowercase letters), e.g. `rcx`. */
  prefix: string;
  /** Host daemons; default 3. */
  hosts?: number;
  mode: ClusterMode;
  /** The base root filesystem (RAMIFY_TEST_ROOTFS). */
  rootfs: string;
  /** Each host's `--snapshot-cache-bytes`; default no limit. */
  snapshotCacheBytes?: number;
  /** `--log-level` of every daemon; default `warn`. */
  logLevel?: 'warn' | 'info' | 'debug';
  /** Copy every daemon's `serve.log` into this directory (as `<host id>.log`, `api.log`) on `close()`. */
  keepLogsAt?: string;
}

/** One host of the cluster. */
export interface ClusterHost extends LanHost {
  hostId: string;
  /** Its API (`plain`) or agent (`roles`) URL on the LAN. */
  url: string;
  dataDir: string;
  networkPrefix: string;
  /** The running daemon, null while stopped. */
  daemon: DaemonProcess | null;
}

export interface Cluster {
  mode: ClusterMode;
  hosts: ClusterHost[];
  /** The first API process (`roles` only), null in `plain` mode or while stopped. */
  api: DaemonProcess | null;
  /** Every API process started (`roles` only), by index; a stopped one stays with `exited()` set. */
  apis: DaemonProcess[];
  /** The SSH relay port of each API process (`--ssh-listen 127.0.0.1:PORT`), by index. */
  apiSshPorts: number[];
  apiKey: string;
  templateId: string;
  databaseUrl: string;
  s3: LocalS3Server;
  /** The port of API process 0's ingress edge on 127.0.0.1 (`roles` only; each API process has its own), which port URLs name. */
  edgePort: number;
  /** Where clients go: the API process in `roles` mode, else host 1. */
  entryUrl(): string;
  /** `call(method, path, body?)` against `url` with the cluster's key. */
  callAt(url: () => string): (method: string, path: string, body?: unknown) => Promise<ApiReply>;
  /** (Re)start host `index`'s daemon (1-based); resolves once it answers. */
  startHost(index: number): Promise<ClusterHost>;
  /** (Re)start API process `index` (default 0; `roles` only) on its own port, kept across restarts. */
  startApi(index?: number): Promise<DaemonProcess>;
  /** Which host holds sandbox `id` now (its `hostId` in Postgres). */
  hostOf(id: string): Promise<string | null>;
  /** Sandbox `id`'s paused image, once its upload to S3 finished (its manifest is in the bucket), polled for up to `timeoutMs`. @throws Error otherwise. */
  durablePausedImage(id: string, timeoutMs?: number): Promise<string>;
  /** Kill every sandbox, stop every process, remove everything made. Idempotent. */
  close(): Promise<void>;
  /** What remains of the cluster on the machine (empty after `close()`). */
  leftovers(): string[];
}

/**
 * Why a cluster cannot run here, or false: root, runsc, nft, nsenter and unshare, the prepared rootfs,
 * Postgres' binaries (a throwaway server is started and stopped to find out).
 */
export async function clusterSkip(rootfs: string | undefined): Promise<string | false> {
  const runtime = realRuntimeSkip(rootfs, ['runsc', 'nft', 'nsenter', 'unshare']);
  if (runtime) return runtime;
  const pg = await startPostgresCluster();
  if ('skip' in pg) return pg.skip;
  pg.stop();
  return false;
}

/** Sandboxes whose runsc container runs under `host`'s data directory now (its runsc state), by id. */
export function sandboxesRunningOn(host: Pick<ClusterHost, 'dataDir'>): string[] {
  const r = spawnSync('runsc', ['--root', join(host.dataDir, 'runtime', 'gvisor', 'state'), 'list', '-format', 'json'], { encoding: 'utf8' });
  const containers = (JSON.parse(r.stdout || 'null') ?? []) as Array<{ id: string; status: string }>;
  return containers.filter((c) => c.status === 'running').map((c) => c.id.split('.')[0] as string);
}

/**
 * `roles` when this checkout's `ramify serve` has `--role` (the API/host split of issue 16), else
 * `plain`: tests run what they can on plain daemons and skip the rest with the reason.
 */
export function detectClusterMode(): ClusterMode {
  const help = spawnSync(process.execPath, [CLI_MAIN, 'serve', '--help'], { encoding: 'utf8' });
  return /--role\b/.test(help.stdout) && /--advertise-url\b/.test(help.stdout) ? 'roles' : 'plain';
}

const BUCKET = 'ramify-cluster';
const PORT = 7423;

/** `ramify serve`'s flags for a host (the database URL and S3 credentials go in its environment). */
export function hostArgs(mode: ClusterMode, host: ClusterHost, s3: LocalS3Server, snapshotCacheBytes?: number, edgePort?: number, logLevel = 'warn'): string[] {
  return [
    ...(mode === 'roles' ? ['--role', 'host', '--advertise-url', host.url] : []),
    ...(edgePort !== undefined ? ['--ingress-public-port', String(edgePort)] : []),
    '--host', host.address, '--port', String(PORT), '--data-dir', host.dataDir, '--network-prefix', host.networkPrefix, '--host-id', host.hostId,
    '--ingress-listen', `${host.address}:7424`, '--ssh-listen', `${host.address}:2222`, '--warm-pool', 'off', '--log-level', logLevel,
    ...s3Args(s3), ...(snapshotCacheBytes !== undefined ? ['--snapshot-cache-bytes', String(snapshotCacheBytes)] : []),
  ];
}

const s3Args = (s3: LocalS3Server): string[] => ['--s3-bucket', s3.bucket, '--s3-endpoint', s3.endpoint, '--s3-path-style'];

/**
 * Start the cluster. @throws Error naming what failed (no Postgres binaries, a daemon that does not
 * come up: its log's tail); whatever was started is removed first.
 */
export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const { prefix, mode } = options;
  const count = options.hosts ?? 3;
  const logLevel = options.logLevel ?? 'warn';
  const baseDir = await mkdtemp(join(tmpdir(), `ramify-${prefix}-cluster-`));
  let lan: HostLan | null = null;
  let pg: PostgresCluster | null = null;
  let s3: LocalS3Server | null = null;
  const hosts: ClusterHost[] = [];
  const apis: DaemonProcess[] = [];
  /** The API processes' ports, kept across restarts (clients keep their URL). */
  const apiPorts: number[] = [];
  /** Their ingress edges' ports, likewise. */
  const edgePorts: number[] = [];
  /** Their SSH relays' ports, likewise. */
  const apiSshPorts: number[] = [];
  let closed = false;
  const seedPrefix = `${prefix}s`;
  const leftovers = (): string[] => [
    ...lanLeftovers(prefix),
    ...[...hosts, { dataDir: join(baseDir, 'seed'), networkPrefix: seedPrefix }].flatMap((h) => hostLeftovers(h)),
    ...processesNaming(baseDir).map((pid) => `process ${pid}`),
    ...(existsSync(baseDir) ? [`directory ${baseDir}`] : []),
    ...ip(['-br', 'link']).split('\n').filter((l) => l.startsWith(prefix)).map((l) => `link ${l.split(/\s+/)[0]}`),
  ];
  const keepLogs = async (into: string): Promise<void> => {
    await mkdir(into, { recursive: true });
    const logs = [...hosts.map((h) => [h.dataDir, h.hostId]), ...apis.map((_, i) => [join(baseDir, `api-${i}`), `api-${i}`])];
    for (const [dir, name] of logs) await copyFile(join(dir!, 'serve.log'), join(into, `${name}.log`)).catch(() => undefined);
  };
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    if (pg && apiKey) await killSandboxes().catch(() => undefined);
    await Promise.all(apis.map((a) => a.stop(20_000)));
    await Promise.all(hosts.map((h) => h.daemon?.stop(20_000)));
    for (const host of hosts) await sweepHost(host);
    if (options.keepLogsAt) await keepLogs(options.keepLogsAt);
    lan?.remove();
    await s3?.close();
    pg?.stop();
    await rm(baseDir, { recursive: true, force: true });
  };
  let apiKey = '';
  const env = (): Record<string, string> => ({ RAMIFY_DATABASE_URL: databaseUrl, RAMIFY_S3_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId, RAMIFY_S3_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey });
  let databaseUrl = '';
  const callAt = (url: () => string) => apiCaller(url, () => apiKey);
  const entryUrl = (): string => (mode === 'roles' ? apis[0]?.url : hosts[0]?.url) ?? '';
  /** Every sandbox not yet killed, killed through the host holding it (the API in `roles` mode). */
  const killSandboxes = async (): Promise<void> => {
    const store = await openStore({ kind: 'postgres', url: databaseUrl });
    try {
      for (const s of (await store.listSandboxes({ limit: 1000 })).sandboxes) {
        if (s.state === 'killed') continue;
        const holder = hosts.find((h) => h.hostId === s.hostId && h.daemon);
        const api = apis.find((a) => !a.exited());
        const url = mode === 'roles' && api ? api.url : holder?.daemon?.url;
        if (url) await callAt(() => url)('DELETE', `/v1/sandboxes/${s.id}`).catch(() => undefined);
      }
    } finally {
      await store.close();
    }
  };
  try {
    lan = createHostLan(prefix, count);
    const started = await startPostgresCluster({ listenAddresses: [lan.serviceAddress, '127.0.0.1'], trustNetworks: [lan.cidr] });
    if ('skip' in started) throw new Error(`a cluster needs Postgres: ${started.skip}`);
    pg = started;
    databaseUrl = await pg.ensureDatabase('ramify_cluster');
    s3 = await startLocalS3Server({ bucket: BUCKET, address: lan.serviceAddress });
    const seeded = await seedTemplate({ networkPrefix: seedPrefix, databaseUrl, s3: { endpoint: s3.endpoint, bucket: BUCKET }, rootfs: options.rootfs });
    apiKey = seeded.apiKey;
    for (const lanHost of lan.hosts) {
      const dataDir = join(baseDir, `host-${lanHost.index}`);
      await mkdir(dataDir, { recursive: true });
      hosts.push({ ...lanHost, hostId: `${prefix}-host-${lanHost.index}`, url: `http://${lanHost.address}:${PORT}`, dataDir, networkPrefix: `${prefix}${String.fromCharCode(96 + lanHost.index)}`, daemon: null });
    }
    const s3Server = s3;
    const startHost = async (index: number): Promise<ClusterHost> => {
      const host = hosts[index - 1];
      if (!host) throw new RangeError(`no host ${index}`);
      if (host.daemon && !host.daemon.exited()) return host;
      if (host.daemon) forgetHostNamespaces(host);
      host.daemon = await startDaemonProcess({ args: hostArgs(mode, host, s3Server, options.snapshotCacheBytes, mode === 'roles' ? edgePorts[0] : undefined, logLevel), env: env(), netns: host.netns, logFile: join(host.dataDir, 'serve.log'), url: host.url });
      return host;
    };
    const startApi = async (index = 0): Promise<DaemonProcess> => {
      if (mode !== 'roles') throw new Error('an API process runs in roles mode only');
      const running = apis[index];
      if (running && !running.exited()) return running;
      const dataDir = join(baseDir, `api-${index}`);
      await mkdir(dataDir, { recursive: true });
      const port = (apiPorts[index] ??= await freePort());
      const edgePort = (edgePorts[index] ??= await freePort());
      const sshPort = (apiSshPorts[index] ??= await freePort());
      const api = await startDaemonProcess({
        args: ['--role', 'api', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir, '--ingress-listen', `127.0.0.1:${edgePort}`, '--ssh-listen', `127.0.0.1:${sshPort}`, '--log-level', logLevel, ...s3Args(s3Server)],
        env: env(), logFile: join(dataDir, 'serve.log'), url: `http://127.0.0.1:${port}`,
      });
      apis[index] = api;
      return api;
    };
    // Hosts name the first API process's edge in their port URLs.
    if (mode === 'roles') edgePorts[0] = await freePort();
    // One at a time: s3rver answers a listing made while another host writes its start-up probe with a 500.
    for (const host of hosts) await startHost(host.index);
    if (mode === 'roles') await startApi();
    const record = async (id: string) => {
      const store = await openStore({ kind: 'postgres', url: databaseUrl });
      try {
        return await store.getSandbox(id);
      } finally {
        await store.close();
      }
    };
    const hostOf = async (id: string): Promise<string | null> => (await record(id))?.hostId ?? null;
    const bucket = new S3ChunkStore(s3Server.connection());
    const durablePausedImage = async (id: string, timeoutMs = 120_000): Promise<string> => {
      for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 250))) {
        const snapshotId = (await record(id))?.pausedSnapshotId;
        if (snapshotId && (await bucket.getManifest(snapshotId)) !== null) return snapshotId;
      }
      throw new Error(`sandbox ${id}'s paused image was not uploaded within ${timeoutMs} ms`);
    };
    return {
      mode, hosts, edgePort: edgePorts[0] ?? 0, get api() { return apis[0] && !apis[0].exited() ? apis[0] : null; }, apis, apiSshPorts, apiKey, templateId: seeded.templateId, databaseUrl, s3: s3Server,
      entryUrl, callAt, startHost, startApi, hostOf, durablePausedImage, close, leftovers,
    };
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
}
