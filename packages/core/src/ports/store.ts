/**
 * The Store port: durable state of the control plane (teams, sandboxes, snapshots, templates, API keys, the audit
 * log, network slot allocation, egress policies and egress logs). `@ramify/store` implements it once for SQLite
 * (the single-machine default) and Postgres (shared by several processes): docs/design/STORE.md. Every call
 * is async but cheap (one indexed statement or one short transaction). Times are ms since the epoch.
 *
 * Crash safety: core writes a sandbox's {@link SandboxRecord.operation} BEFORE the runtime acts and clears
 * it in the same write that records the outcome, so after a crash `reconcile` finds every half-done
 * operation and rolls it forward or back. A write has happened when its promise resolved.
 */
import type { ApiKeyRole, AutoPause, EgressLogEntry, EgressPeer, ExposedPort, RuntimeName, SandboxState, SnapshotInfo, SnapshotNetworks, TeamQuota, TimeoutAction } from '@ramify/contracts';
import type { CanonicalEgressPolicy } from '../egress/policy.js';
import type { EventStore } from './event-store.js';
import type { HostRegistry } from './hosts.js';
import type { TeamRoomStore } from './team-room.js';
import type { TreeRoomStore } from './tree-room.js';

/**
 * A sandbox's inbound side: the ports it exposes through the daemon's ingress (port order, no duplicates)
 * and whether a request to one of them wakes it when paused (`null`: the default, on while a port is
 * exposed). Kept across pause, resume and restarts, copied to forks, recorded with snapshots. The access
 * token is not part of it (see {@link Store.ensureAccessToken}): every sandbox has its own.
 */
export interface SandboxIngress {
  ports: ExposedPort[];
  autoResume: boolean | null;
}

/** A lifecycle operation in flight, persisted before the runtime acts. */
export type SandboxOperation =
  | { kind: 'create' }
  | { kind: 'pause'; snapshotId: string }
  | { kind: 'resume'; snapshotId: string }
  /** Fork: the fork point, the children being made, and whether the parent must be restored afterwards. */
  | { kind: 'fork'; snapshotId: string; childIds: string[]; parentWasRunning: boolean }
  | { kind: 'snapshot'; snapshotId: string; name: string; parentWasRunning: boolean }
  | { kind: 'kill' };

/** Everything needed to describe and reconcile one sandbox. */
export interface SandboxRecord {
  id: string;
  /**
   * The team it belongs to, fixed at creation (the creating key's team; a fork child's is its parent's).
   * Every API call naming it checks this first (another team's sandbox is not found).
   */
  teamId: string;
  state: SandboxState;
  runtime: RuntimeName;
  templateId: string;
  /** Snapshot the sandbox was restored from at creation (template image, fork point or named snapshot). */
  sourceSnapshotId: string | null;
  /**
   * Host directory of the root filesystem the sandbox runs on, pinned at creation (the template's at that
   * time, or the source snapshot's). Every restore of this sandbox uses it, never the template's current
   * one: an image is only valid on the exact root filesystem it was made on, and rebuilding a template
   * points the template at a new directory.
   */
  rootfsDir: string;
  parentId: string | null;
  cpuCount: number;
  memoryMB: number;
  /** Root disk size, MiB, for runtimes with a disk of their own (microVM); null otherwise (gVisor). */
  diskSizeMB: number | null;
  metadata: Record<string, string>;
  /**
   * Default environment of the sandbox's commands, set in the guest at every start, resume and fork:
   * fixed at create (the template's `envs`, or from a snapshot the envs recorded with it, overridden per
   * key by the create request's), copied to forks and recorded with every snapshot taken of it.
   */
  envs: Record<string, string>;
  createdAt: number;
  /** Lifetime granted at create/resume/setTimeout. */
  timeoutMs: number;
  onTimeout: TimeoutAction;
  /** When `onTimeout` fires, ms; null while not running (the clock stops when paused). */
  endAt: number | null;
  /** Network slot held (running and paused sandboxes keep theirs); null when none. A slot number is unique per host. */
  slot: number | null;
  /**
   * The host that holds its runtime instance (running) or its local image (paused): the daemon that
   * created, forked or last resumed it (`Core.hostId`, `ramify serve --host-id`). Null only for a row from
   * before migration 26 no daemon has adopted yet ({@link Store.adoptUnhostedRows}).
   */
  hostId: string | null;
  /** The image a paused sandbox resumes from. */
  pausedSnapshotId: string | null;
  /** Human-readable reason of the `error` state (or of the last failed operation). */
  error: string | null;
  operation: SandboxOperation | null;
  /** Exposed ports and autoResume (see {@link SandboxIngress}). */
  ingress: SandboxIngress;
  /** Idle auto-pause (`{ idleMs }`); null when off. Copied to fork children. */
  autoPause: AutoPause | null;
  /**
   * The last use of the sandbox as persisted, ms (idle auto-pause's clock across daemon restarts): written
   * with every transition to `running` and by {@link Store.recordActivity} (core's activity persister, at
   * most every `activityPersistMs`), so it may lag the daemon's in-memory figure by that much. Null: never
   * written (a sandbox not yet running, or one from before schema migration 14).
   */
  lastActiveAt: number | null;
}

/** Fields of a sandbox that change after creation. */
export type SandboxPatch = Partial<Omit<SandboxRecord, 'id' | 'teamId' | 'runtime' | 'templateId' | 'rootfsDir' | 'createdAt' | 'parentId'>>;

export interface SandboxQuery {
  /** Only this team's sandboxes; absent = every team's (the daemon's own sweeps). */
  teamId?: string;
  /** Only these states; empty/absent = every state. */
  states?: SandboxState[];
  /** Every pair must match exactly. */
  metadata?: Record<string, string>;
  /** Page size; implementations cap it at 1000. Default 100. */
  limit?: number;
  /** Opaque cursor from a previous page's `nextCursor`. */
  cursor?: string;
  /** Only sandboxes whose `endAt` is at or before this time (the timeout scheduler's query). */
  endAtOrBefore?: number;
  /** Only sandboxes with a non-null operation (reconcile). */
  withOperation?: boolean;
  /** Only sandboxes held by this host (a host's own sweeps: liveness, timeouts, usage, reconcile). */
  hostId?: string;
}

export interface SandboxPage {
  sandboxes: SandboxRecord[];
  /** Cursor of the next page, or null on the last page. */
  nextCursor: string | null;
}

/** `pending` while its image is being written; `ready` once committed to snapshot storage. */
export type SnapshotStatus = 'pending' | 'ready';

export interface SnapshotRecord {
  id: string;
  /**
   * The team it belongs to: its sandbox's; a template image's: the team of the template that first
   * registered it (images are keyed by content, so two teams' identical builds share one).
   */
  teamId: string;
  /** Unique among the team's snapshots when set. */
  name: string | null;
  kind: SnapshotInfo['kind'];
  status: SnapshotStatus;
  runtime: RuntimeName;
  templateId: string;
  /** Sandbox it was taken from (null for template images). */
  sandboxId: string | null;
  parentSnapshotId: string | null;
  sizeBytes: number;
  createdAt: number;
  /**
   * The host whose snapshot storage holds the image locally: the one that wrote it. Null only for a row
   * from before migration 26 no daemon has adopted yet.
   */
  hostId: string | null;
  /** Resources of the sandbox it was taken from (defaults for sandboxes created from it). */
  cpuCount: number;
  memoryMB: number;
  /** Its sandbox's root disk size, MiB (the least a sandbox created from it has); null without one. */
  diskSizeMB: number | null;
  /**
   * Its sandbox's `envs` when it was taken (pause images, fork points, named snapshots): a sandbox created
   * from it starts with these, the create request's over them. Null for template images (their template's
   * envs apply) and for rows written before they were recorded (unknown: the template's envs apply).
   * Kept out of the API (`SnapshotInfo`): they may hold secrets.
   */
  envs: Record<string, string> | null;
  /**
   * Its sandbox's egress policy when it was taken (pause images, fork points, named snapshots; a pause
   * image named later: when it was named): a sandbox created from it starts with it unless the create
   * request gives one. Null for template images (open) and for rows from before schema migration 10 whose
   * sandbox was gone when the store was upgraded (nothing to go on: open, as before).
   */
  egress: CanonicalEgressPolicy | null;
  /**
   * Its sandbox's exposed ports and autoResume when it was taken (as `egress`); a sandbox created from it
   * starts with them unless the request gives `ports`. Null or absent: none recorded (template images, rows
   * from before schema migration 11): no ports.
   */
  ingress?: SandboxIngress | null;
  /**
   * Its sandbox's idle auto-pause when it was taken (as `egress`); a sandbox created from it starts with it
   * unless the request gives `autoPause`. Null or absent: off, or none recorded (template images, rows from
   * before schema migration 13).
   */
  autoPause?: AutoPause | null;
  /**
   * The private networks its sandbox was on when it was taken (network name and alias; as `egress`).
   * Recorded only: a sandbox created from it joins none. Null or absent: none recorded (template images,
   * rows from before schema migration 17).
   */
  networks?: SnapshotNetworks | null;
  /**
   * Host directory of the root filesystem the image was made on (its sandbox's pinned one; a template
   * image's template rootfs). The image may only be restored on this directory.
   */
  rootfsDir: string;
}

/** The fields of a snapshot that change after it is inserted. */
export type SnapshotPatch = Partial<Pick<SnapshotRecord, 'name' | 'kind' | 'status' | 'sizeBytes' | 'templateId' | 'envs' | 'egress' | 'ingress' | 'autoPause' | 'networks'>>;

/** A private network (see core's `networks/`). */
export interface NetworkRecord {
  /** `net_<ulid>`. */
  id: string;
  /** The team it belongs to; only that team's sandboxes join it. */
  teamId: string;
  /** A DNS label, unique in its team. */
  name: string;
  createdAt: number;
}

/** One sandbox on one network, under an alias unique on that network. */
export interface NetworkMemberRecord {
  networkId: string;
  sandboxId: string;
  alias: string;
  /** When it joined, ms. */
  attachedAt: number;
}

/** A membership with its network's name (what enforcement and the API need). */
export interface NetworkMembership extends NetworkMemberRecord {
  network: string;
}

export interface TemplateRecord {
  id: string;
  /**
   * The team that built it. The default team's templates are shared: every team lists and uses them
   * (only the default team rebuilds or deletes them); any other team's are its own.
   */
  teamId: string;
  /** Unique within its team. */
  name: string;
  /** Runtime of the default image (sandboxes that do not ask for a runtime). */
  runtime: RuntimeName;
  specHash: string;
  /** The default booted-and-idle image sandboxes of the template are restored from. */
  snapshotId: string;
  /**
   * One booted-and-idle image per runtime the template was built for, all made on `rootfsDir`; the
   * default one (`runtime`/`snapshotId`) is always among them (the store puts it first).
   */
  images: Array<{ runtime: RuntimeName; snapshotId: string }>;
  /** Parent template name, if built `from` one. */
  parent: string | null;
  /**
   * Default environment of the template's sandboxes: its spec's `envs` merged over its parent's (the
   * child's win). A sandbox's own envs are these overridden by its create request's (computed once at create).
   */
  envs: Record<string, string>;
  sizeBytes: number;
  /**
   * Host directory of the template's current root filesystem (read-only to sandboxes). A rebuild with
   * different content replaces it; sandboxes and snapshots keep the one they were made on (their own `rootfsDir`).
   */
  rootfsDir: string;
  createdAt: number;
}

export interface ApiKeyRecord {
  id: string;
  /** The team whose resources the key sees and touches (only those). */
  teamId: string;
  role: ApiKeyRole;
  name: string;
  /** sha256 (hex) of the full key; the key itself is never stored. */
  hash: string;
  /** First characters of the key, for people to recognise it (`rmf_AbCd`). */
  prefix: string;
  createdAt: number;
  lastUsedAt: number | null;
  /** ms; refused from then on. Null: until revoked. */
  expiresAt: number | null;
  revokedAt: number | null;
}

/** A team: its id (a slug people type, also its name) and its quota. */
export interface TeamRecord {
  id: string;
  createdAt: number;
  /** Limits; a null field is no limit. */
  quota: TeamQuota;
}

/**
 * One audit entry. Numbered like events (docs/design/TEAMS.md, "Audit ids"): `seq` is the global order,
 * internal (a team that saw it would read the other teams' activity from its gaps); `teamSeq` is the
 * entry's number in its stream, the team's (1, 2, 3, ... per team) or, for entries without a team, the
 * anonymous stream's: the API's `AuditEntry.id`.
 */
export interface AuditRecord {
  /** Assigned by the store, increasing over every entry; never shown to a team. */
  seq: number;
  /** Assigned by the store: the next number of the entry's stream (its team's, or the anonymous stream's when `teamId` is null). */
  teamSeq: number;
  at: number;
  apiKeyId: string | null;
  /** The caller's team; null when the call carried no valid key. */
  teamId: string | null;
  method: string;
  path: string;
  /** e.g. `sandbox.pause`. */
  action: string;
  sandboxId: string | null;
  status: number;
  errorCode: string | null;
  /** The MCP tool the call was made for (`x-ramify-mcp-tool`), null for other callers and events. */
  tool: string | null;
}

/** A page of the audit log, newest first; default 100 entries, capped at 1000. */
export type AuditQuery = {
  limit?: number;
  sandboxId?: string;
} & (
  /** Every entry, by `seq` (the operator's tools and tests; never an API caller). */
  | { teamId?: undefined; beforeTeamSeq?: undefined }
  /**
   * One stream, by `teamSeq`: the team's entries, or (null) the entries of calls that carried no valid key.
   * `beforeTeamSeq`: only entries numbered below it in that stream (paging backwards).
   */
  | { teamId: string | null; beforeTeamSeq?: number }
);

/** A sandbox's stored egress policy: its mode and canonical rules (see core's `egress/policy.ts`), in order. */
export interface EgressPolicyRecord extends CanonicalEgressPolicy {
  sandboxId: string;
  /** When it was last set, ms. */
  updatedAt: number;
}

/**
 * One stored egress verdict (an allowed or denied connection, a DNS name answered or refused), as core's
 * egress log sink hands it over. Field meanings as in the API's `EgressLogEntry`, but `at` in ms.
 */
export interface EgressLogRecord {
  sandboxId: string;
  /** When enforcement saw it, ms since the epoch. */
  at: number;
  protocol: EgressLogEntry['protocol'];
  /** Destination IPv4 address ('' for a refused DNS name). */
  destination: string;
  port: number | null;
  name: string | null;
  verdict: EgressLogEntry['verdict'];
  /** The normalised rule that allowed it; null when denied or open. */
  rule: string | null;
  /** The other sandbox of a connection between two sandboxes (and the network that allowed it); absent or null otherwise. */
  peer?: EgressPeer | null;
  /** Why an allowed DNS lookup got no address (`NXDOMAIN`, `SERVFAIL`); absent or null otherwise. */
  error?: EgressLogEntry['error'];
}

/**
 * One request the ingress served (or answered itself) for a sandbox's port, as stored. Field meanings as
 * in the API's `IngressLogEntry`, but `at` in ms since the epoch.
 */
export interface IngressLogRecord {
  sandboxId: string;
  at: number;
  client: string;
  method: string;
  /** Path and query without the token parameter, at most 2048 characters. */
  path: string;
  port: number;
  status: number;
  /** Response bytes sent to the client. */
  bytes: number;
  durationMs: number;
  woke: boolean;
}

/** One sandbox's last use, ms, for {@link Store.recordActivity}. */
export interface SandboxActivityRecord {
  sandboxId: string;
  at: number;
}

/** How often ingress requests woke a sandbox. */
export interface IngressWakes {
  count: number;
  /** Last wake, ms since the epoch; null if never. */
  lastAt: number | null;
}

/** A registered SSH public key (see core's `ssh/keys.ts`). */
export interface SshKeyRecord {
  /** `sshk_<ulid>`. */
  id: string;
  /** The team it belongs to: it opens that team's sandboxes only. Unique with `fingerprint`. */
  teamId: string;
  /** The API key that registered it; null when not known. */
  ownerApiKeyId: string | null;
  name: string;
  /** Key algorithm, e.g. `ssh-ed25519`. */
  type: string;
  /** `SHA256:` + unpadded base64 of the key blob's sha256; unique among the team's keys. */
  fingerprint: string;
  /** `type base64`, without a comment. */
  publicKey: string;
  createdAt: number;
}

/** A short-lived SSH access token of one sandbox (see core's `ssh/access.ts`); the token itself is never stored. */
export interface SshTokenRecord {
  /** sha256 (hex) of the token. */
  hash: string;
  sandboxId: string;
  /** The API key that asked for it. */
  ownerApiKeyId: string | null;
  createdAt: number;
  /** ms since the epoch; refused from then on. */
  expiresAt: number;
}

/**
 * Where a sandbox's metering stands (core's `usage/`): its time figures are written up to `timeAt`, and its
 * counters up to the reading taken at `sampledAt` (the raw counters of that reading kept, so the next
 * reading, by this daemon or the next one, counts only what came after). No row: nothing written yet
 * (time counts from the sandbox's `createdAt`, counters from zero).
 */
export interface SandboxMeterRecord {
  sandboxId: string;
  /** ms; running, paused, memory and disk time are written up to here. */
  timeAt: number;
  /** ms of the last counter reading; null: none yet. */
  sampledAt: number | null;
  /** The runtime instance that reading was of (`RuntimeUsage.instance`). */
  instance: string | null;
  /** Its raw CPU counter then, µs. */
  cpuUs: number | null;
  /** The slot link's raw byte counters then (sandbox side). */
  netInBytes: number | null;
  netOutBytes: number | null;
}

/** Metered amounts (of one sandbox in one UTC hour, or summed over a group). */
export interface UsageAmounts {
  /** Time in a holding state (creating, running, pausing, resuming), ms. */
  runningMs: number;
  pausedMs: number;
  cpuUs: number;
  /** `memoryMB` × running time, MiB·ms. */
  memoryMiBMs: number;
  /** Pause image bytes × paused time, byte·ms. */
  diskByteMs: number;
  netInBytes: number;
  netOutBytes: number;
  /** The most memory in use seen, bytes (a maximum, not a sum). */
  memoryPeakBytes: number;
}

/** One write of a sandbox's metering: amounts added to UTC hours, and the meter's new position. */
export interface UsageWrite {
  sandboxId: string;
  /** Added to the sandbox's hour rows (`hour`: ms at the start of a UTC hour); `memoryPeakBytes` is maxed, not added. */
  hours: ReadonlyArray<{ hour: number } & Partial<UsageAmounts>>;
  /** Meter fields to set; those absent are left as they are (a counter reading and a time write never overwrite each other). */
  meter: Partial<Omit<SandboxMeterRecord, 'sandboxId'>>;
}

/** What {@link Store.sumUsage} sums. */
export interface UsageSumQuery {
  /** Only this team's sandboxes. */
  teamId?: string;
  /** Only these sandboxes. */
  sandboxIds?: readonly string[];
  /** Hours from (inclusive) and to (exclusive), ms at UTC hour starts. */
  fromHour: number;
  toHour: number;
  /** One sum per sandbox and UTC day, instead of per sandbox. */
  byDay: boolean;
}

/** One sandbox's summed amounts (over the query's hours, or one UTC day of them). */
export interface UsageSum extends UsageAmounts {
  sandboxId: string;
  templateId: string;
  teamId: string;
  /** `YYYY-MM-DD` (UTC) when summed by day, else null. */
  day: string | null;
}

/** A budget set on a sandbox: it covers the sandbox and every sandbox forked from it (core's `usage/budgets.ts`). */
export interface BudgetRecord {
  /** The sandbox it is set on (the root of the covered tree). */
  sandboxId: string;
  teamId: string;
  /** Limits; null: no limit. */
  cpuSeconds: number | null;
  sandboxSeconds: number | null;
  maxSandboxes: number | null;
  /** When it was first set, ms: usage counts from here. */
  since: number;
  /** The tree's CPU time and running time when it was set (subtracted from its totals). */
  baseCpuUs: number;
  baseRunningMs: number;
  /** The limit found exceeded (its event was emitted), or null. */
  exceeded: 'cpuSeconds' | 'sandboxSeconds' | null;
  updatedAt: number;
}

/** A network slot leased to a sandbox on one host: slot numbers are unique per host (each host has its own address plan). */
export interface SlotLease {
  hostId: string;
  slot: number;
  sandboxId: string;
}

/** Rows {@link Store.adoptUnhostedRows} gave a host. */
export interface AdoptedRows {
  sandboxes: number;
  snapshots: number;
  slots: number;
}

/** See the module doc; the events, webhooks and command log half is {@link EventStore}. */
export interface Store extends EventStore, HostRegistry, TeamRoomStore, TreeRoomStore {
  /** Insert a new sandbox. Rejects `CONFLICT` when the id exists. */
  insertSandbox(record: SandboxRecord): Promise<void>;
  getSandbox(id: string): Promise<SandboxRecord | null>;
  /**
   * Apply `patch` atomically and return the updated record. A patch to `killed` also deletes the sandbox's
   * egress and ingress logs, its SSH access tokens and its network memberships in the same write. Rejects `SANDBOX_NOT_FOUND`.
   */
  updateSandbox(id: string, patch: SandboxPatch): Promise<SandboxRecord>;
  /** Sandboxes in creation order (oldest first), filtered and paginated. Rejects `VALIDATION_FAILED` for a bad cursor. */
  listSandboxes(query: SandboxQuery): Promise<SandboxPage>;
  /**
   * The team's sandboxes that hold resources now (quota accounting): those in one of `states`, and those
   * paused only for a moment inside a fork or snapshot of a running sandbox (operation `parentWasRunning`).
   * Cost: one indexed query.
   */
  listResourceHolders(teamId: string, states: readonly SandboxState[]): Promise<Array<{ id: string; memoryMB: number }>>;

  /** Rejects `CONFLICT` when the id is taken. */
  insertTeam(record: TeamRecord): Promise<void>;
  getTeam(id: string): Promise<TeamRecord | null>;
  /** By id. */
  listTeams(): Promise<TeamRecord[]>;
  /**
   * Set the limits given (absent ones kept; null: no limit) in one write, so processes setting different
   * limits at once keep both; returns the team. Rejects `TEAM_NOT_FOUND`.
   */
  setTeamQuota(id: string, quota: Partial<TeamQuota>): Promise<TeamRecord>;

  /** Rejects `CONFLICT` when the id, or the name within the team, is taken. */
  insertSnapshot(record: SnapshotRecord): Promise<void>;
  getSnapshot(id: string): Promise<SnapshotRecord | null>;
  /** The team's snapshot with this name (names are unique per team). */
  findSnapshotByName(name: string, teamId: string): Promise<SnapshotRecord | null>;
  /** Rejects `SNAPSHOT_NOT_FOUND`, or `CONFLICT` when a new name is taken. */
  updateSnapshot(id: string, patch: SnapshotPatch): Promise<SnapshotRecord>;
  /** Newest first. */
  listSnapshots(filter?: { sandboxId?: string; kinds?: SnapshotRecord['kind'][] }): Promise<SnapshotRecord[]>;
  /** No-op when absent. */
  deleteSnapshot(id: string): Promise<void>;
  /**
   * Ids of sandboxes that are not killed and reference `snapshotId` as their paused image or source,
   * plus templates built on it (as `template:<id>`).
   */
  snapshotReferences(snapshotId: string): Promise<{ pausedBy: string[]; sourceOf: string[]; templates: string[] }>;

  /** Insert or replace by id. Rejects `CONFLICT` when another template of the team has the name. */
  putTemplate(record: TemplateRecord): Promise<void>;
  getTemplate(id: string): Promise<TemplateRecord | null>;
  /** The team's own template with this name (names are unique per team; shared templates are the default team's). */
  findTemplateByName(name: string, teamId: string): Promise<TemplateRecord | null>;
  listTemplates(): Promise<TemplateRecord[]>;
  deleteTemplate(id: string): Promise<void>;

  insertApiKey(record: ApiKeyRecord): Promise<void>;
  /** The un-revoked key with this hash, or null (expired ones too: the caller checks `expiresAt`). */
  findApiKeyByHash(hash: string): Promise<ApiKeyRecord | null>;
  getApiKey(id: string): Promise<ApiKeyRecord | null>;
  /** Oldest first; only the team's when `teamId` is given. */
  listApiKeys(filter?: { teamId?: string }): Promise<ApiKeyRecord[]>;
  touchApiKey(id: string, at: number): Promise<void>;
  revokeApiKey(id: string, at: number): Promise<void>;

  /** Append one entry; its two numbers are taken in one transaction (on Postgres the stream's counter row is locked until commit). */
  appendAudit(entry: Omit<AuditRecord, 'seq' | 'teamSeq'>): Promise<Pick<AuditRecord, 'seq' | 'teamSeq'>>;
  /** Newest first: by `teamSeq` within one stream, by `seq` over every entry (see {@link AuditQuery}). */
  listAudit(query: AuditQuery): Promise<AuditRecord[]>;

  /**
   * Lease host `hostId`'s lowest free slot (≥ 1) to `sandboxId`, or return the one it already holds there
   * (a lease it holds on another host is given up). Rejects `RUNTIME_UNAVAILABLE` when none is free.
   */
  allocateSlot(sandboxId: string, hostId: string): Promise<number>;
  /** Free the slot leased to `sandboxId`; no-op when it holds none. */
  releaseSlot(sandboxId: string): Promise<void>;
  /** Host `hostId`'s leases, by slot. */
  listSlots(hostId: string): Promise<SlotLease[]>;
  /**
   * Give `hostId` every sandbox, snapshot and slot row that names no host (rows from before migration 26:
   * on one machine, all of them belong to its daemon), in one transaction. A daemon calls it at start,
   * before reconcile. Returns how many rows of each it adopted.
   */
  adoptUnhostedRows(hostId: string): Promise<AdoptedRows>;

  /** The sandbox's egress policy, or null when none was ever set (open egress). */
  getEgressPolicy(sandboxId: string): Promise<EgressPolicyRecord | null>;
  /**
   * Replace the sandbox's whole egress policy with `policy` (stored as given, rules in order: core
   * normalises them first) in one write, and return it. Rejects `SANDBOX_NOT_FOUND` for an unknown sandbox.
   */
  putEgressPolicy(sandboxId: string, policy: CanonicalEgressPolicy, at: number): Promise<EgressPolicyRecord>;
  /** Forget the sandbox's egress policy (back to "never set"); no-op when absent. Used to roll back a first set. */
  deleteEgressPolicy(sandboxId: string): Promise<void>;

  /**
   * The sandbox's access token (its token ports' credential), storing `candidate` first when it has none:
   * one atomic write, so concurrent callers all get the same token. Never logged.
   * Rejects `SANDBOX_NOT_FOUND` for an unknown sandbox.
   */
  ensureAccessToken(sandboxId: string, candidate: string, at: number): Promise<string>;
  /** The sandbox's access token, or null when it has none yet. */
  getAccessToken(sandboxId: string): Promise<string | null>;

  /**
   * Append egress verdicts (of any sandboxes; kept in the order given) in one transaction; returns how many
   * were stored. Entries of unknown or killed sandboxes are skipped (verdicts can trail a kill). Each
   * sandbox keeps only its newest entries (a bound the implementation is configured with, default 1000):
   * older ones are dropped, oldest first. Cost: one short transaction, plus now and then an indexed trim.
   */
  appendEgressLog(entries: readonly EgressLogRecord[]): Promise<number>;
  /**
   * The sandbox's newest egress log entries, newest (last appended) first: at most `limit` (1-1000, and
   * never more than the bound). Empty for an unknown or killed sandbox.
   */
  listEgressLog(sandboxId: string, limit: number): Promise<EgressLogRecord[]>;

  /**
   * Append ingress log entries in order (one transaction); entries of unknown or killed sandboxes are
   * skipped. Each sandbox keeps its newest N entries (the store's bound, default 1000).
   * @returns how many were stored.
   */
  appendIngressLog(entries: readonly IngressLogRecord[]): Promise<number>;
  /** The sandbox's newest ingress log entries, newest first: at most `limit` (1-1000). Empty for an unknown or killed sandbox. */
  listIngressLog(sandboxId: string, limit: number): Promise<IngressLogRecord[]>;
  /** Count one wake of the sandbox by an ingress request at `at` (ms). No-op for an unknown sandbox. */
  recordIngressWake(sandboxId: string, at: number): Promise<void>;
  /** How often ingress requests woke the sandbox (zero for an unknown one). */
  getIngressWakes(sandboxId: string): Promise<IngressWakes>;

  /**
   * Record when each sandbox was last used (`lastActiveAt`), in one transaction. A time never moves a
   * sandbox's figure backwards; unknown sandboxes are skipped.
   */
  recordActivity(entries: readonly SandboxActivityRecord[]): Promise<void>;

  /** Rejects `SSH_KEY_EXISTS` (details `id`, `fingerprint`) when the team has a key with this fingerprint. */
  insertSshKey(record: SshKeyRecord): Promise<void>;
  /** Oldest first; only the team's when `teamId` is given. */
  listSshKeys(teamId?: string): Promise<SshKeyRecord[]>;
  /** The team's key with this fingerprint. */
  findSshKeyByFingerprint(fingerprint: string, teamId: string): Promise<SshKeyRecord | null>;
  /** Delete the team's key `id`. @returns whether a key was deleted (false for another team's). */
  deleteSshKey(id: string, teamId: string): Promise<boolean>;
  /**
   * Store a token record, and drop every token expired at `record.createdAt` in the same transaction.
   * Rejects `SANDBOX_NOT_FOUND` for an unknown sandbox. A kill of the sandbox deletes its tokens.
   */
  insertSshToken(record: SshTokenRecord): Promise<void>;
  /** The token record with this hash (expired or not), or null. */
  findSshToken(hash: string): Promise<SshTokenRecord | null>;
  /** Delete the token record with this hash. @returns whether there was one. */
  deleteSshToken(hash: string): Promise<boolean>;

  /** Rejects `NETWORK_EXISTS` (details `name`, `id`) when the name is taken. */
  insertNetwork(record: NetworkRecord): Promise<void>;
  getNetwork(id: string): Promise<NetworkRecord | null>;
  /** The team's network of that name, or null. */
  findNetworkByName(teamId: string, name: string): Promise<NetworkRecord | null>;
  /** The team's networks, oldest first. */
  listNetworks(teamId: string): Promise<NetworkRecord[]>;
  /**
   * Delete the network if no sandbox is on it, in one transaction. Rejects `NETWORK_IN_USE` (details
   * `sandboxes`: their ids) otherwise, `NETWORK_NOT_FOUND` when absent.
   */
  deleteNetwork(id: string): Promise<void>;
  /**
   * Put the sandbox on the network. Rejects `NETWORK_ALIAS_TAKEN` (details `network`, `alias`, `sandboxId`)
   * when another member has the alias, `CONFLICT` when the sandbox is on it already, `NETWORK_NOT_FOUND`
   * or `SANDBOX_NOT_FOUND` when either is gone.
   */
  addNetworkMember(member: NetworkMemberRecord): Promise<void>;
  /** @returns whether the sandbox was on the network. */
  removeNetworkMember(networkId: string, sandboxId: string): Promise<boolean>;
  /** The networks a sandbox is on, in the order it joined them. */
  networksOfSandbox(sandboxId: string): Promise<NetworkMembership[]>;
  /** A network's members, by alias. */
  membersOfNetwork(networkId: string): Promise<NetworkMembership[]>;

  /** The meters of these sandboxes (absent ones have none yet). */
  getMeters(sandboxIds: readonly string[]): Promise<SandboxMeterRecord[]>;
  /**
   * Apply metering writes in one transaction: hour amounts added (peak maxed), meter fields set. Writes of
   * unknown sandboxes are skipped. Cost: a few indexed upserts per sandbox.
   */
  recordUsage(writes: readonly UsageWrite[]): Promise<void>;
  /** Summed hour amounts per sandbox (and per UTC day when `byDay`), ordered by sandbox id and day. */
  sumUsage(query: UsageSumQuery): Promise<UsageSum[]>;
  /** The root (ancestor without a parent) of each given sandbox: id → root id. */
  treeRoots(sandboxIds: readonly string[]): Promise<Map<string, string>>;
  /** The sandbox and every sandbox forked from it, recursively (killed ones included), parents before children. */
  subtree(rootId: string): Promise<SandboxRecord[]>;

  /** Insert or replace the budget set on `record.sandboxId`. Rejects `SANDBOX_NOT_FOUND` for an unknown sandbox. */
  putBudget(record: BudgetRecord): Promise<void>;
  getBudget(sandboxId: string): Promise<BudgetRecord | null>;
  /** No-op when absent. */
  deleteBudget(sandboxId: string): Promise<void>;
  /** The budgets covering any of these sandboxes: set on one of them or on one of their ancestors. */
  budgetsCovering(sandboxIds: readonly string[]): Promise<BudgetRecord[]>;

  close(): Promise<void>;
}
