/**
 * {@link Sandbox}: the handle users hold. Control-plane calls exist both as statics taking an id
 * (`Sandbox.kill(id)`) and as methods on a handle (`sbx.kill()`), as in E2B's SDK.
 */
import { ROUTES, RamifyError } from '@ramify/contracts/client';
import type {
  AutoPause, CreateSandboxRequest, NetworkJoinRequest, EgressLogEntry, EgressLogResponse, EgressPolicyInfo, EgressPolicyRequest, ForkResponse, IngressEndpoint, IngressLogResponse,
  PortAccess, PortInfo, PortSpec, PortsInfo, PortUrlInfo, RuntimeName, SandboxInfo, SnapshotInfo, SshAccessInfo, TimeoutAction,
  Budget, BudgetInfo, SandboxTreeResponse, UsageFigures, UsageResponse,
} from '@ramify/contracts';
import { resolveConnection, type ConnectionOpts } from './connection.js';
import { ApiClient } from './http.js';
import { Commands } from './commands/commands.js';
import { Pty } from './commands/pty.js';
import { Files } from './files.js';
import { SandboxNetworks } from './networks.js';
import { InvalidStateError, SandboxNotFoundError } from './errors.js';
import { SandboxPaginator, type SandboxListFilter } from './paginator.js';
import { explore, type ExploreOpts, type ExploreReport, type ExploreStoppedReport, type Strategy } from './explore.js';
import { listEventsWith, streamEventsWith, timelineWith, type EventStreamHandle, type ListEventsOpts, type StreamEventsOpts, type TimelineOpts } from './events.js';
import type { ListEventsResponse, TimelineEntry } from '@ramify/contracts';
import { deleteBudget, fetchBudgets, fetchMetrics, fetchSandboxUsage, fetchTree, getUsage, patchBudget, type SandboxMetrics, type TimeArg, type UsageOpts } from './usage.js';

/** Options of {@link Sandbox.create}. */
export interface SandboxOpts extends ConnectionOpts {
  /** Template name or id; default `base`. Not together with `snapshot`. */
  template?: string;
  /** Start from this snapshot (id or name) instead of a template: memory, processes and files. */
  snapshot?: string;
  /** Lifetime, ms (max 24 h); at the deadline `onTimeout` happens. Server default 300000. */
  timeoutMs?: number;
  /** What the deadline does: `pause` (the default) or `kill`. */
  onTimeout?: TimeoutAction;
  /**
   * Default environment of every command in the sandbox, placed over the template's `envs` (the same
   * name: this value wins). From a snapshot: over the envs its sandbox had when it was taken (for a
   * snapshot taken before they were recorded, over its template's).
   */
  envs?: Record<string, string>;
  /** Free-form labels, filterable in `Sandbox.list({ metadata })`. */
  metadata?: Record<string, string>;
  cpuCount?: number;
  memoryMB?: number;
  /**
   * Root disk size, MiB; microVM sandboxes only (a gVisor sandbox keeps file changes in its memory:
   * `VALIDATION_FAILED`). At least the image's disk (2048 for templates by default), which is the default.
   */
  diskSizeMB?: number;
  runtime?: RuntimeName;
  /**
   * Egress policy: allow rules (`pypi.org`, `*.example.com:443`, `10.0.0.0/8`, `*`, ...; `[]` = open) or
   * `{ mode: 'deny-all' }` (nothing leaves; also `{ mode: 'open' }`, `{ mode: 'allowlist', rules }`).
   * Absent: open egress, or from a snapshot the policy the snapshot recorded (`SnapshotInfo.egress`).
   * A bad rule fails the create with `VALIDATION_FAILED` naming it. See {@link Sandbox.prototype.setEgress}.
   */
  egress?: string[] | EgressPolicyRequest;
  /**
   * Ports to expose at their URLs ({@link Sandbox.prototype.getUrl}): `3000` (token access) or
   * `{ port: 3000, access: 'public' }`. See {@link Sandbox.prototype.expose}.
   */
  ports?: PortSpec[];
  /** Whether a request to an exposed port wakes the sandbox when paused; default on while a port is exposed. */
  autoResume?: boolean;
  /**
   * Idle auto-pause: pause once idle for `idleMs` (10 s to 24 h): no API call or open stream on it, no
   * ingress request or connection, CPU under the daemon's threshold. Never kills; with a port exposed a
   * request wakes it again. `null`: off. Absent: off, or from a snapshot what it recorded. See
   * {@link Sandbox.prototype.setAutoPause}.
   */
  autoPause?: AutoPause | null;
  /**
   * Private networks to join before it runs: `[{ network: 'n1' }, { network: 'n2', alias: 'worker' }]`
   * (alias default `sbx-` and the id's last 8 characters). Not taken from a snapshot. See {@link Network}.
   */
  networks?: NetworkJoinRequest[];
  /**
   * Limits of this sandbox and everything forked from it: `{ cpuSeconds?, sandboxSeconds?, maxSandboxes? }`.
   * Over cpuSeconds or sandboxSeconds the whole tree is paused (never killed) and forks and resumes in it
   * throw `BudgetExceededError` until {@link Sandbox.prototype.setBudget} raises it.
   */
  budget?: Budget;
}

/** Options of {@link Sandbox.list}. */
export type SandboxListOpts = SandboxListFilter & ConnectionOpts;


/** A handle to one sandbox. Holding it costs nothing; every method is one or a few API calls. */
export class Sandbox {
  /** The sandbox id (`sbx_...`). */
  readonly sandboxId: string;
  /** Run commands and manage processes. */
  readonly commands: Commands;
  /** Terminals (PTYs): processes started with a size, typed into and resized. */
  readonly pty: Pty;
  /** Read and write files. */
  readonly files: Files;
  /** Its private networks: `attach(network, { alias })`, `detach(network)`, `list()`. */
  readonly networks: SandboxNetworks;
  private readonly api: ApiClient;
  /** Where the daemon's port URLs point (from the sandbox's info); null when unknown or the daemon has no ingress. */
  private ingress: IngressEndpoint | null;

  private constructor(sandboxId: string, api: ApiClient, ingress: IngressEndpoint | null = null) {
    this.sandboxId = sandboxId;
    this.api = api;
    this.ingress = ingress;
    this.commands = new Commands(api, sandboxId);
    this.pty = new Pty(api, sandboxId);
    this.files = new Files(api, sandboxId);
    this.networks = new SandboxNetworks(api, sandboxId);
  }

  /** @internal Every live command and terminal handle of this object stops following; their waits reject with `err`. */
  abandonHandles(err: RamifyError): void {
    this.commands.abandonHandles(err);
    this.pty.abandonHandles(err);
  }

  /**
   * Create a sandbox (state `running` when this resolves): `create({ template: 'base', ... })`, or as
   * E2B's SDK takes it, `create('base', { ... })`. Throws `TEMPLATE_NOT_FOUND`, `SNAPSHOT_NOT_FOUND`,
   * `VALIDATION_FAILED`, ...
   */
  static async create(opts?: SandboxOpts): Promise<Sandbox>;
  static async create(template: string, opts?: Omit<SandboxOpts, 'template'>): Promise<Sandbox>;
  static async create(templateOrOpts: string | SandboxOpts = {}, more: Omit<SandboxOpts, 'template'> = {}): Promise<Sandbox> {
    const opts: SandboxOpts = typeof templateOrOpts === 'string' ? { ...more, template: templateOrOpts } : templateOrOpts;
    const { apiUrl, apiKey, requestTimeoutMs, headers, ...rest } = opts;
    const api = new ApiClient(resolveConnection({ apiUrl, apiKey, requestTimeoutMs, headers }));
    const body: CreateSandboxRequest = { ...rest };
    if (body.template === undefined && body.snapshot === undefined) body.template = 'base';
    const info = await api.at(ROUTES.createSandbox, {}).json<SandboxInfo>({ json: body });
    return new Sandbox(info.id, api, info.ingress);
  }

  /**
   * Get a handle to an existing sandbox. A paused sandbox is resumed (as E2B does); a killed one throws
   * {@link InvalidStateError}; an unknown id throws {@link SandboxNotFoundError}.
   */
  static async connect(sandboxId: string, opts: ConnectionOpts = {}): Promise<Sandbox> {
    const sbx = new Sandbox(sandboxId, new ApiClient(resolveConnection(opts)));
    const info = await sbx.getInfo();
    sbx.ingress = info.ingress;
    if (info.state === 'paused') await sbx.resume();
    else if (info.state === 'killed' || info.state === 'killing') {
      throw new InvalidStateError('INVALID_STATE', `sandbox '${sandboxId}' is ${info.state}`, { id: sandboxId, state: info.state });
    }
    return sbx;
  }

  /** List sandboxes page by page: `const p = Sandbox.list(); while (p.hasNext) items.push(...await p.nextItems())`, or `for await (const info of Sandbox.list())`. */
  static list(opts: SandboxListOpts = {}): SandboxPaginator {
    const { apiUrl, apiKey, requestTimeoutMs, headers, ...filter } = opts;
    return new SandboxPaginator(new ApiClient(resolveConnection({ apiUrl, apiKey, requestTimeoutMs, headers })), filter);
  }

  /** Kill a sandbox. Resolves true when killed (or already killed), false if it does not exist. */
  static async kill(sandboxId: string, opts: ConnectionOpts = {}): Promise<boolean> {
    try {
      await new ApiClient(resolveConnection(opts)).at(ROUTES.killSandbox, { id: sandboxId }).empty();
      return true;
    } catch (err) {
      if (err instanceof SandboxNotFoundError) return false;
      throw err;
    }
  }

  /** A sandbox's info. Throws {@link SandboxNotFoundError}. */
  static getInfo(sandboxId: string, opts: ConnectionOpts = {}): Promise<SandboxInfo> {
    return new ApiClient(resolveConnection(opts)).at(ROUTES.getSandbox, { id: sandboxId }).json<SandboxInfo>();
  }

  /** Pause (checkpoint) a sandbox by id; see {@link Sandbox.prototype.pause}. */
  static pause(sandboxId: string, opts: ConnectionOpts = {}): Promise<SandboxInfo> {
    return new Sandbox(sandboxId, new ApiClient(resolveConnection(opts))).pause();
  }

  /** Resume a paused sandbox by id; see {@link Sandbox.prototype.resume}. */
  static resume(sandboxId: string, opts: ConnectionOpts & { timeoutMs?: number } = {}): Promise<SandboxInfo> {
    const { timeoutMs, ...conn } = opts;
    return new Sandbox(sandboxId, new ApiClient(resolveConnection(conn))).resume({ timeoutMs });
  }

  /** Set a sandbox's remaining lifetime by id; see {@link Sandbox.prototype.setTimeout}. */
  static setTimeout(sandboxId: string, timeoutMs: number, opts: ConnectionOpts = {}): Promise<SandboxInfo> {
    return new Sandbox(sandboxId, new ApiClient(resolveConnection(opts))).setTimeout(timeoutMs);
  }

  /** A sandbox's lifecycle events, oldest first (see `Events.list`). */
  static listEvents(sandboxId: string, opts: Omit<ListEventsOpts, 'sandboxId'> = {}): Promise<ListEventsResponse> {
    const { apiUrl, apiKey, requestTimeoutMs, headers, ...filter } = opts;
    return listEventsWith(new ApiClient(resolveConnection({ apiUrl, apiKey, requestTimeoutMs, headers })), { ...filter, sandboxId });
  }

  /** Handles to existing sandboxes without any API call (e.g. ids from `Sandbox.list()`). */
  static fromId(sandboxId: string, opts: ConnectionOpts = {}): Sandbox {
    return new Sandbox(sandboxId, new ApiClient(resolveConnection(opts)));
  }

  /**
   * Best-of-N: fork `source` once per strategy (one fork call), run the strategies concurrently, score
   * each, keep the winner and kill the others. With a `budget`, a budget that runs out first makes it
   * return an `ExploreStoppedReport` (`stoppedBy: 'budget'`). See {@link explore}.
   */
  static explore<T>(source: Sandbox, strategies: Strategy<T>[], opts: ExploreOpts<T> & { budget?: undefined }): Promise<ExploreReport<T>>;
  static explore<T>(source: Sandbox, strategies: Strategy<T>[], opts: ExploreOpts<T>): Promise<ExploreReport<T> | ExploreStoppedReport<T>>;
  static explore<T>(source: Sandbox, strategies: Strategy<T>[], opts: ExploreOpts<T>): Promise<ExploreReport<T> | ExploreStoppedReport<T>> {
    return explore(source, strategies, opts);
  }

  /** This sandbox's lifecycle events, oldest first (see `Events.list`). */
  listEvents(opts: Omit<ListEventsOpts, 'sandboxId' | keyof ConnectionOpts> = {}): Promise<ListEventsResponse> {
    return listEventsWith(this.api, { ...opts, sandboxId: this.sandboxId });
  }

  /** Follow this sandbox's events live (see `Events.stream`). */
  streamEvents(opts: Omit<StreamEventsOpts, 'sandboxId' | keyof ConnectionOpts>): Promise<EventStreamHandle> {
    return streamEventsWith(this.api, { ...opts, sandboxId: this.sandboxId });
  }

  /** Its timeline: lifecycle events, commands (exit code, duration), egress and ingress decisions, newest first (see `Events.timeline`). */
  timeline(opts: TimelineOpts = {}): Promise<TimelineEntry[]> {
    return timelineWith(this.api, this.sandboxId, opts);
  }

  /** A sandbox's live metrics by id; see {@link Sandbox.prototype.getMetrics}. */
  static getMetrics(sandboxId: string, opts: ConnectionOpts & { start?: TimeArg; end?: TimeArg } = {}): Promise<SandboxMetrics[]> {
    const { start, end, ...conn } = opts;
    return fetchMetrics(new ApiClient(resolveConnection(conn)), sandboxId, { start, end });
  }

  /** The key's team's usage report (grouped by sandbox, tree, template, team or day); see {@link getUsage}. */
  static getUsage(opts: UsageOpts & ConnectionOpts = {}): Promise<UsageResponse> {
    return getUsage(opts);
  }

  /** This sandbox's current info. */
  getInfo(): Promise<SandboxInfo> {
    return this.api.at(ROUTES.getSandbox, { id: this.sandboxId }).json<SandboxInfo>();
  }

  /** True when the sandbox is `running` (false when paused, killed or gone). */
  async isRunning(): Promise<boolean> {
    try {
      return (await this.getInfo()).state === 'running';
    } catch (err) {
      if (err instanceof SandboxNotFoundError) return false;
      throw err;
    }
  }

  /** Kill the sandbox (idempotent). */
  async kill(): Promise<void> {
    await this.api.at(ROUTES.killSandbox, { id: this.sandboxId }).empty();
  }

  /**
   * Pause: checkpoint memory, processes and files, stop the lifetime clock. Open command streams end;
   * re-attach after resume with `commands.connect(pid)`. Throws `CHECKPOINT_BLOCKED` (an
   * {@link InvalidStateError}; the sandbox keeps running) when an outbound connection prevents it.
   */
  pause(): Promise<SandboxInfo> {
    return this.api.at(ROUTES.pauseSandbox, { id: this.sandboxId }).json<SandboxInfo>();
  }

  /** Resume a paused sandbox (same id); `timeoutMs` restarts its lifetime clock. */
  resume(opts: { timeoutMs?: number } = {}): Promise<SandboxInfo> {
    const body = opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs };
    return this.api.at(ROUTES.resumeSandbox, { id: this.sandboxId }).json<SandboxInfo>({ json: body });
  }

  /**
   * Fork into `count` new sandboxes (max 64), each with this one's memory, processes and files. Each joins
   * this one's private networks as `<alias>-<n>` (siblings and parent find each other by name) unless
   * `networks: false`.
   */
  async fork(opts: { count?: number; networks?: boolean } = {}): Promise<Sandbox[]> {
    const json = { count: opts.count ?? 1, ...(opts.networks !== undefined ? { networks: opts.networks } : {}) };
    const res = await this.api.at(ROUTES.forkSandbox, { id: this.sandboxId }).json<ForkResponse>({ json });
    return res.sandboxes.map((info) => new Sandbox(info.id, this.api, info.ingress));
  }

  /**
   * Samples of the sandbox taken while it ran (as E2B's `getMetrics`): every 5 s by default, the last hour,
   * oldest first: `timestamp`, `cpuCount`, `cpuUsedPct`, `memUsed`/`memTotal` and `diskUsed`/`diskTotal`
   * (bytes; disk null for gVisor, whose file changes live in memory). Kept in the daemon's memory: empty
   * again after a daemon restart until the next sample.
   */
  getMetrics(opts: { start?: TimeArg; end?: TimeArg } = {}): Promise<SandboxMetrics[]> {
    return fetchMetrics(this.api, this.sandboxId, opts);
  }

  /** What this sandbox used in a window (default the last 30 days, up to now): seconds running and paused, CPU-seconds, memory, disk, bytes in and out. */
  getUsage(opts: { from?: TimeArg; to?: TimeArg } = {}): Promise<UsageFigures> {
    return fetchSandboxUsage(this.api, this.sandboxId, opts);
  }

  /** The fork tree this sandbox is in, from its root: each sandbox's state, usage and budget. */
  getTree(): Promise<SandboxTreeResponse> {
    return fetchTree(this.api, this.sandboxId);
  }

  /**
   * Set or raise the budget of this sandbox and everything forked from it: the limits given change (null
   * removes one). A new budget counts from now. Raising it above what the tree used lets its paused
   * sandboxes resume. Throws `VALIDATION_FAILED` for a limit not above 0 (nothing changes).
   */
  setBudget(budget: Budget): Promise<BudgetInfo> {
    return patchBudget(this.api, this.sandboxId, budget);
  }

  /** The budgets covering this sandbox (its own first, then its ancestors'), with what their trees used. */
  getBudgets(): Promise<BudgetInfo[]> {
    return fetchBudgets(this.api, this.sandboxId);
  }

  /** Remove the budget set on this sandbox (its ancestors' still cover it). */
  removeBudget(): Promise<void> {
    return deleteBudget(this.api, this.sandboxId);
  }

  /** Take a named, persistent snapshot (outlives the sandbox; `Sandbox.create({ snapshot: name })` starts from it). */
  snapshot(opts: { name: string }): Promise<SnapshotInfo> {
    return this.api.at(ROUTES.snapshotSandbox, { id: this.sandboxId }).json<SnapshotInfo>({ json: { name: opts.name } });
  }

  /**
   * Replace the sandbox's egress policy, atomically and live (running or paused; no restart): a list of
   * rules or `{ mode: 'deny-all' }` (nothing leaves: no name resolves, no address is reachable). Rules, in
   * order: `host` (at least two labels: `none` or `localhost` is refused), `*.host` (subdomains),
   * `host:port`, `ip`, `ip:port`, `cidr`, `cidr:port` (IPv4), `*`; a port is `N` or `N-M`. `[]` (or
   * `{ mode: 'open' }`) opens egress again; any rule makes everything else denied (max 1000).
   * Resolves with the policy in force (mode, normalised rules). Throws `VALIDATION_FAILED` naming the first
   * bad rule (`details.rule`, `details.index`), or a mode that does not fit the rules (`details.field`);
   * the previous policy then stays in force.
   */
  setEgress(policy: string[] | EgressPolicyRequest): Promise<EgressPolicyInfo> {
    const body: EgressPolicyRequest = Array.isArray(policy) ? { rules: policy } : policy;
    return this.api.at(ROUTES.setEgress, { id: this.sandboxId }).json<EgressPolicyInfo>({ json: body });
  }

  /** The egress policy in force: normalised rules, `mode` (`open`, `allowlist` or `deny-all`) and `updatedAt`. */
  getEgress(): Promise<EgressPolicyInfo> {
    return this.api.at(ROUTES.getEgress, { id: this.sandboxId }).json<EgressPolicyInfo>();
  }

  /** Egress verdicts (allowed and denied connections; DNS answers, one entry per address; refused DNS names, one per query), newest first; `limit` 1-1000 (default 100). */
  async getEgressLog(opts: { limit?: number } = {}): Promise<EgressLogEntry[]> {
    const res = await this.api.at(ROUTES.getEgressLog, { id: this.sandboxId }).json<EgressLogResponse>({ query: { limit: opts.limit } });
    return res.entries;
  }

  /** Set the remaining lifetime to `timeoutMs` from now (max 24 h). */
  setTimeout(timeoutMs: number): Promise<SandboxInfo> {
    return this.api.at(ROUTES.setSandboxTimeout, { id: this.sandboxId }).json<SandboxInfo>({ json: { timeoutMs } });
  }

  /**
   * The host of `port`'s URL, as E2B's `getHost`: `<port>-<sandboxId>.<domain>[:<ingressPort>]` (lower-case).
   * Synchronous: from the info the handle was made with (create, connect, fork).
   * @throws RamifyError `RUNTIME_UNAVAILABLE` when the daemon serves no ingress, or the handle was made by
   *   `fromId` (no info: use `Sandbox.connect`).
   */
  getHost(port: number): string {
    const endpoint = this.ingress;
    if (!endpoint) throw new RamifyError('RUNTIME_UNAVAILABLE', 'no ingress endpoint known for this handle: the daemon serves no ingress, or the handle came from Sandbox.fromId (use Sandbox.connect)');
    return `${port}-${this.sandboxId}.${endpoint.domain}`.toLowerCase() + (endpoint.port === null ? '' : `:${endpoint.port}`);
  }

  /** The URL of `port`: `http(s)://` + {@link getHost}(port) + `/`. A token port needs the token (see {@link getPortUrl}). */
  getUrl(port: number): string {
    return `${this.ingress?.protocol ?? 'http'}://${this.getHost(port)}/`;
  }

  /**
   * Expose `port` at its URL (stored before it resolves; kept across pause, resume, fork and restarts), or
   * change its access: `token` (default; the token from {@link getPortUrl}) or `public`.
   * @throws `VALIDATION_FAILED` for a port outside 1-65535, `SANDBOX_NOT_FOUND` (also when killed).
   */
  expose(port: number, opts: { access?: PortAccess } = {}): Promise<PortInfo> {
    return this.api.at(ROUTES.exposePort, { id: this.sandboxId, port }).json<PortInfo>({ json: opts.access ? { access: opts.access } : {} });
  }

  /** Close `port` to the ingress (idempotent). */
  async unexpose(port: number): Promise<void> {
    await this.api.at(ROUTES.unexposePort, { id: this.sandboxId, port }).empty();
  }

  /** The exposed ports with their URLs, and `autoResume`. */
  getPorts(): Promise<PortsInfo> {
    return this.api.at(ROUTES.getPorts, { id: this.sandboxId }).json<PortsInfo>();
  }

  /**
   * `port`'s URL, host and, for a token port, the access token (send it as header `X-Ramify-Access-Token`,
   * or open `url?ramify_access_token=TOKEN` once in a browser). Throws `PORT_NOT_EXPOSED` when it is not exposed.
   */
  getPortUrl(port: number): Promise<PortUrlInfo> {
    return this.api.at(ROUTES.getPortUrl, { id: this.sandboxId, port }).json<PortUrlInfo>();
  }

  /** Whether a request to an exposed port wakes the sandbox when it is paused. */
  setAutoResume(autoResume: boolean): Promise<PortsInfo> {
    return this.api.at(ROUTES.setAutoResume, { id: this.sandboxId }).json<PortsInfo>({ json: { autoResume } });
  }

  /**
   * Pause the sandbox once idle for `idleMs` (10000-86400000 ms), live; `null` turns it off.
   * @throws `VALIDATION_FAILED` (idleMs out of range), `SANDBOX_NOT_FOUND` (also when killed).
   */
  setAutoPause(autoPause: AutoPause | null): Promise<SandboxInfo> {
    return this.api.at(ROUTES.setAutoPause, { id: this.sandboxId }).json<SandboxInfo>({ json: { autoPause } });
  }

  /**
   * Requests the ingress served for this sandbox (time, client, method, path without the token, status,
   * body bytes, ms, whether it woke the sandbox), newest first (`limit` 1-1000, default 100; the daemon
   * keeps the newest 1000), and how often a request woke it (`wakeups`, `lastWakeAt`).
   */
  getIngressLog(opts: { limit?: number } = {}): Promise<IngressLogResponse> {
    return this.api.at(ROUTES.getIngressLog, { id: this.sandboxId }).json<IngressLogResponse>({ query: { limit: opts.limit } });
  }

  /**
   * A short-lived token opening this sandbox over SSH, and a ready command: `ssh -p 2222 <id>+<token>@host`
   * (`ttlMs` 60000-86400000, default 1 h; the token is stored hashed and shown only here).
   * @throws `SSH_UNAVAILABLE` (the daemon serves no SSH gateway), `SANDBOX_NOT_FOUND` (also when killed).
   */
  getSshAccess(opts: { ttlMs?: number } = {}): Promise<SshAccessInfo> {
    return this.api.at(ROUTES.createSshAccess, { id: this.sandboxId }).json<SshAccessInfo>({ json: opts.ttlMs !== undefined ? { ttlMs: opts.ttlMs } : {} });
  }
}
