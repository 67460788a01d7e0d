/**
 * {@link DaemonHarness}: one real Ramify daemon run as a child process (so crash cases can SIGKILL it),
 * on a fresh temp data directory, with the suite's own network prefix. It builds the `base` template
 * through the API, restarts (SIGTERM) or crashes (SIGKILL) the daemon on the same data directory and
 * port, offers raw API calls for status-code checks, and cleans up everything on teardown: sandboxes,
 * the daemon, runsc containers, QEMU processes, namespaces `<prefix>-*`, the nftables table
 * `ip <prefix>`, the temp dir. The daemon opens only the runtimes the run needs (default: the target).
 * One run per prefix at a time: a second daemon with the same prefix would take the first's namespaces
 * for orphans (the gVisor run uses `rmc`, the microVM run `rmv`, so those two can coexist).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ListSandboxesResponse, RuntimeName, SandboxInfo, TemplateInfo } from '@ramify/contracts';
import { resolveCacheDir } from '@ramify/daemon';
import { buildTemplate, type ConnectionOpts } from '@ramify/sdk';
import { BASE_TEMPLATE_SPEC } from '@ramify/template-builder';
import type { DaemonEntryConfig, DaemonEntryReady } from './daemon-entry.js';
import { removeHostNetwork, removeRunscContainers } from './host-cleanup.js';
import { armInterruptCleanup } from './interrupt-cleanup.js';
import { removeQemuProcesses } from './qemu-processes.js';

/** Network prefix of every conformance daemon (namespaces `rmc-*`, nftables table `ip rmc`). */
export const CONFORMANCE_PREFIX = 'rmc';
/** Network prefix of the microVM conformance run (`rmv-*`, its own slot /16): it can run beside an `rmc` one. */
export const MICROVM_PREFIX = 'rmv';
/** Warm network slots of the conformance daemon (the daemon's own default, set explicitly because the namespace checks count them). */
export const DEFAULT_WARM_SLOTS = 8;
/** How long a SIGTERMed daemon may take to exit before it is SIGKILLed, ms. */
const STOP_GRACE_MS = 30_000;
/** How long a daemon may take to listen (reconcile included), ms. */
const START_TIMEOUT_MS = 120_000;

/** Options of {@link DaemonHarness.open}. */
export interface HarnessOptions {
  /** Runtime the suite targets (sent with every create; the base template is built for it only). */
  runtime: RuntimeName;
  /** Runtimes the daemon opens; default only `runtime` (so a gVisor run never prepares microVM images). */
  runtimes?: RuntimeName[];
  /** Default {@link CONFORMANCE_PREFIX}. */
  prefix?: string;
  /** Default: `RAMIFY_CACHE_DIR`, else the daemon's default `/var/cache/ramify` (`resolveCacheDir`), as `ramify serve`. */
  cacheDir?: string;
  /** Daemon log level (its log goes to `<tempDir>/daemon.log`); default `warn`. */
  logLevel?: DaemonEntryConfig['logLevel'];
  /** Prepared network slots the daemon keeps for the next creates; default {@link DEFAULT_WARM_SLOTS}. */
  warmSlots?: number;
  /** Copy the daemon's log here on teardown (the temp dir is deleted); default: not kept. */
  keepLogAt?: string;
}

/** A raw API answer: status and parsed JSON body (null when empty or not JSON). */
export interface RawResponse {
  status: number;
  body: unknown;
  text: string;
}

/** Options of {@link DaemonHarness.call}. */
export interface RawCallOpts {
  /** JSON body (serialized with `content-type: application/json`). */
  json?: unknown;
  /** Raw body text sent as `application/json` (for malformed or oversize bodies). */
  rawJson?: string;
  /** `key` (default): the daemon's key; `none`: no Authorization header; any other string: that bearer key. */
  auth?: 'key' | 'none' | { bearer: string };
}

/** States that still hold resources (everything but `killed`). */
export const LIVE_STATES = ['creating', 'running', 'pausing', 'paused', 'resuming', 'killing', 'error'] as const;

/** A real daemon for the conformance suite. Create with {@link DaemonHarness.open}. */
export class DaemonHarness {
  readonly runtime: RuntimeName;
  /** Runtimes the daemon opens (the target first). */
  readonly runtimes: RuntimeName[];
  readonly prefix: string;
  readonly tempDir: string;
  readonly dataDir: string;
  readonly logPath: string;
  /** Namespaces the daemon may keep prepared beyond its live sandboxes. */
  readonly warmSlots: number;
  private readonly cacheDir: string;
  private readonly keepLogAt: string | undefined;
  private readonly logLevel: DaemonEntryConfig['logLevel'];
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private port = 0;
  private currentUrl = '';
  private key = '';
  private disarmExitCleanup: () => void = () => undefined;

  private constructor(options: HarnessOptions, tempDir: string) {
    this.runtime = options.runtime;
    this.runtimes = options.runtimes ?? [options.runtime];
    this.prefix = options.prefix ?? CONFORMANCE_PREFIX;
    this.cacheDir = resolveCacheDir(options.cacheDir);
    this.logLevel = options.logLevel ?? 'warn';
    this.warmSlots = options.warmSlots ?? DEFAULT_WARM_SLOTS;
    this.keepLogAt = options.keepLogAt;
    this.tempDir = tempDir;
    this.dataDir = join(tempDir, 'data');
    this.logPath = join(tempDir, 'daemon.log');
  }

  /**
   * Remove leftovers of an earlier aborted run with the same prefix (QEMU processes in its namespaces
   * included), make a temp dir, start the daemon. Until {@link teardown}, an exit of this process or a
   * SIGINT/SIGTERM kills the daemon and the QEMU processes of its data dir (see interrupt-cleanup.ts).
   * Rejects (with the daemon's log tail) when it does not come up.
   */
  static async open(options: HarnessOptions): Promise<DaemonHarness> {
    const harness = new DaemonHarness(options, await mkdtemp(join(tmpdir(), 'ramify-conformance-')));
    await removeQemuProcesses({ prefix: harness.prefix });
    await removeHostNetwork(harness.prefix);
    harness.disarmExitCleanup = armInterruptCleanup({
      killDaemon: () => harness.child?.kill('SIGKILL'),
      dataDir: harness.dataDir,
      tempDir: harness.tempDir,
      logPath: harness.logPath,
      keepLogAt: harness.keepLogAt,
      prefix: harness.prefix,
    });
    try {
      await harness.start();
    } catch (err) {
      await harness.teardown();
      throw err;
    }
    return harness;
  }

  /** Runtimes the daemon reports unavailable, with the reason (`GET /v1/health`). */
  async unavailableRuntimes(): Promise<Partial<Record<RuntimeName, string>>> {
    const res = await this.call('GET', '/v1/health', { auth: 'none' });
    if (res.status !== 200) throw new Error(`GET /v1/health: HTTP ${res.status} ${res.text}`);
    return (res.body as { unavailableRuntimes?: Partial<Record<RuntimeName, string>> }).unavailableRuntimes ?? {};
  }

  /** Base URL of the running daemon (`http://127.0.0.1:PORT`); the port stays the same across restarts. */
  get url(): string {
    return this.currentUrl;
  }

  /** The daemon's API key (`rmf_...`, from `<dataDir>/api-key`). */
  get apiKey(): string {
    return this.key;
  }

  /** Connection options for the SDK. */
  get conn(): ConnectionOpts {
    return { apiUrl: this.currentUrl, apiKey: this.key };
  }

  /** True while the daemon child process runs. */
  get running(): boolean {
    return this.child !== undefined;
  }

  /** Start the daemon on the data directory (the same port as before, after the first start). */
  async start(): Promise<void> {
    if (this.child) throw new Error('daemon already running');
    const config: DaemonEntryConfig = { dataDir: this.dataDir, cacheDir: this.cacheDir, prefix: this.prefix, port: this.port, logLevel: this.logLevel, warmSlots: this.warmSlots, runtimes: this.runtimes };
    const entry = fileURLToPath(new URL('./daemon-entry.js', import.meta.url));
    const logFd = openSync(this.logPath, 'a');
    let child: ChildProcess;
    try {
      child = spawn(process.execPath, [entry, JSON.stringify(config)], { stdio: ['ignore', 'pipe', logFd] });
    } finally {
      closeSync(logFd);
    }
    this.child = child;
    this.exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    void this.exited.then(() => { if (this.child === child) this.child = undefined; });
    const ready = await new Promise<DaemonEntryReady>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`daemon did not listen within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
      lines.once('line', (line) => {
        clearTimeout(timer);
        try { resolve(JSON.parse(line) as DaemonEntryReady); } catch { reject(new Error(`unexpected daemon output: ${line}`)); }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`daemon exited before listening (code ${code}, signal ${signal})`));
      });
    }).catch(async (err: unknown) => {
      child.kill('SIGKILL');
      await this.exited;
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n--- daemon log tail ---\n${await this.logTail()}`);
    });
    this.currentUrl = ready.url;
    this.port = Number(new URL(ready.url).port);
    this.key = (await readFile(join(this.dataDir, 'api-key'), 'utf8')).trim();
  }

  /** Graceful stop (SIGTERM; SIGKILL after a grace period). Sandboxes keep running. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await this.exited;
    clearTimeout(timer);
  }

  /** SIGKILL the daemon (no cleanup at all) and wait until it is gone. */
  async crash(): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill('SIGKILL');
    await this.exited;
  }

  /** {@link stop}, then {@link start} on the same data directory and port. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Build the `base` template through `POST /v1/templates`, for the target runtime only (NDJSON progress; resolves on `done`). */
  buildBaseTemplate(): Promise<TemplateInfo> {
    return buildTemplate(BASE_TEMPLATE_SPEC, { ...this.conn, runtimes: [this.runtime] });
  }

  /** A raw API call (`path` starts with `/v1`), for status codes and error bodies. */
  async call(method: string, path: string, opts: RawCallOpts = {}): Promise<RawResponse> {
    const headers: Record<string, string> = {};
    const auth = opts.auth ?? 'key';
    if (auth === 'key') headers.authorization = `Bearer ${this.key}`;
    else if (auth !== 'none') headers.authorization = `Bearer ${auth.bearer}`;
    let body: string | undefined;
    if (opts.json !== undefined || opts.rawJson !== undefined) {
      headers['content-type'] = 'application/json';
      body = opts.rawJson ?? JSON.stringify(opts.json);
    }
    const res = await fetch(`${this.currentUrl}${path}`, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = null;
    try { parsed = text ? JSON.parse(text) : null; } catch { parsed = null; }
    return { status: res.status, body: parsed, text };
  }

  /** Every sandbox that is not `killed` (all pages). */
  async liveSandboxes(): Promise<SandboxInfo[]> {
    const out: SandboxInfo[] = [];
    let token: string | null = null;
    do {
      const query = new URLSearchParams({ state: LIVE_STATES.join(','), limit: '1000', ...(token ? { nextToken: token } : {}) });
      const res = await this.call('GET', `/v1/sandboxes?${query.toString()}`);
      if (res.status !== 200) throw new Error(`listing sandboxes failed: HTTP ${res.status} ${res.text}`);
      const page = res.body as ListSandboxesResponse;
      out.push(...page.sandboxes);
      token = page.nextToken;
    } while (token);
    return out;
  }

  /** The last `bytes` of the daemon's log (stderr of every start). */
  async logTail(bytes = 8192): Promise<string> {
    const text = await readFile(this.logPath, 'utf8').catch(() => '');
    return text.slice(-bytes);
  }

  /**
   * Kill every sandbox through the API, stop the daemon, force-delete leftover runsc containers, kill
   * leftover QEMU processes of the data dir, remove the prefix's namespaces, veths, nftables table and
   * ip rules, and delete the temp dir. Never throws.
   */
  async teardown(): Promise<void> {
    if (this.child) {
      try {
        for (const sandbox of await this.liveSandboxes()) await this.call('DELETE', `/v1/sandboxes/${encodeURIComponent(sandbox.id)}`);
      } catch {
        // The daemon may be unhealthy; the host cleanup below still runs.
      }
      await this.stop();
    }
    await removeRunscContainers(join(this.dataDir, 'runtime', 'gvisor', 'state'));
    await removeQemuProcesses({ dataDir: this.dataDir, prefix: this.prefix });
    await removeHostNetwork(this.prefix);
    this.disarmExitCleanup();
    if (this.keepLogAt) await copyFile(this.logPath, this.keepLogAt).catch(() => undefined);
    await rm(this.tempDir, { recursive: true, force: true });
  }
}
