/**
 * The tables as kysely sees them: one interface per table, each column typed as read back (both drivers
 * return numbers for integer and real columns: the Postgres pool parses BIGINT and NUMERIC). JSON columns
 * are TEXT on both databases (the store writes and parses the JSON itself). `Generated` marks columns the
 * database fills (AUTOINCREMENT / identity sequences). The numbered migrations are the schema's source;
 * these types follow them.
 */
import type { Generated, Kysely } from 'kysely';
import { dialectOf, registerDialect } from './prepared.js';

export interface SandboxesTable {
  id: string;
  team_id: string;
  state: string;
  runtime: string;
  template_id: string;
  source_snapshot_id: string | null;
  rootfs_dir: string;
  parent_id: string | null;
  cpu_count: number;
  memory_mb: number;
  disk_size_mb: number | null;
  metadata: string;
  envs: string;
  created_at: number;
  timeout_ms: number;
  on_timeout: string;
  end_at: number | null;
  slot: number | null;
  paused_snapshot_id: string | null;
  error: string | null;
  operation: string | null;
  updated_at: number;
  ingress: Generated<string>;
  auto_pause: string | null;
  ingress_wakeups: Generated<number>;
  last_wake_at: number | null;
  last_active_at: number | null;
  /** Migration 26; NULL until adopted. */
  host_id: string | null;
}

export interface SandboxMetadataTable {
  sandbox_id: string;
  key: string;
  value: string;
}

export interface SnapshotsTable {
  id: string;
  team_id: string;
  name: string | null;
  kind: string;
  status: string;
  runtime: string;
  template_id: string;
  sandbox_id: string | null;
  parent_snapshot_id: string | null;
  size_bytes: number;
  created_at: number;
  cpu_count: number;
  memory_mb: number;
  rootfs_dir: string;
  disk_size_mb: number | null;
  envs: string | null;
  egress: string | null;
  ingress: string | null;
  auto_pause: string | null;
  networks: string | null;
  /** The host holding the image locally (migration 26); NULL until adopted. */
  host_id: string | null;
}

export interface TemplatesTable {
  id: string;
  team_id: string;
  name: string;
  runtime: string;
  spec_hash: string;
  snapshot_id: string;
  parent: string | null;
  size_bytes: number;
  rootfs_dir: string;
  created_at: number;
  images: string;
  envs: string;
}

export interface ApiKeysTable {
  id: string;
  team_id: string;
  role: string;
  name: string;
  hash: string;
  prefix: string;
  created_at: number;
  last_used_at: number | null;
  expires_at: number | null;
  revoked_at: number | null;
}

export interface AuditLogTable {
  /** The global order: internal, never shown to a team (migration 35). */
  id: Generated<number>;
  /** The entry's number in its team's stream (team_id NULL: the anonymous stream's), 1, 2, 3, ...: its public id (migration 35). */
  team_seq: number;
  at: number;
  api_key_id: string | null;
  team_id: string | null;
  method: string;
  path: string;
  action: string;
  sandbox_id: string | null;
  status: number;
  error_code: string | null;
  tool: string | null;
}

export interface SlotsTable {
  /** Migration 26; '' for a row from before, until adopted. */
  host_id: Generated<string>;
  slot: number;
  sandbox_id: string;
}

export interface EgressPoliciesTable {
  sandbox_id: string;
  mode: string;
  rules: string;
  updated_at: number;
}

export interface EgressLogTable {
  seq: Generated<number>;
  sandbox_id: string;
  at: number;
  protocol: string;
  destination: string;
  port: number | null;
  name: string | null;
  verdict: string;
  rule: string | null;
  peer_sandbox_id: string | null;
  peer_network: string | null;
  /** Migration 27: NXDOMAIN or SERVFAIL for an allowed DNS lookup that got no address; NULL otherwise. */
  error: string | null;
}

export interface IngressLogTable {
  seq: Generated<number>;
  sandbox_id: string;
  at: number;
  client: string;
  method: string;
  path: string;
  port: number;
  status: number;
  bytes: number;
  duration_ms: number;
  woke: number;
}

export interface CommandLogTable {
  seq: Generated<number>;
  sandbox_id: string;
  at: number;
  pid: number;
  cmd: string;
  exit_code: number | null;
  signal: string | null;
  error: string | null;
  duration_ms: number;
  key_id: string | null;
}

export interface AccessTokensTable {
  sandbox_id: string;
  token: string;
  created_at: number;
}

export interface SshKeysTable {
  id: string;
  team_id: string;
  owner_api_key_id: string | null;
  name: string;
  type: string;
  fingerprint: string;
  public_key: string;
  created_at: number;
}

export interface SshTokensTable {
  hash: string;
  sandbox_id: string;
  owner_api_key_id: string | null;
  created_at: number;
  expires_at: number;
}

export interface TeamsTable {
  id: string;
  created_at: number;
  max_running: number | null;
  max_memory_mb: number | null;
  max_forks_per_call: number | null;
}

export interface NetworksTable {
  id: string;
  team_id: string;
  name: string;
  created_at: number;
}

export interface NetworkMembersTable {
  network_id: string;
  sandbox_id: string;
  alias: string;
  attached_at: number;
}

export interface SandboxMetersTable {
  sandbox_id: string;
  time_at: number;
  sampled_at: number | null;
  instance: string | null;
  cpu_us: number | null;
  net_in_bytes: number | null;
  net_out_bytes: number | null;
}

export interface UsageHoursTable {
  sandbox_id: string;
  hour: number;
  running_ms: Generated<number>;
  paused_ms: Generated<number>;
  cpu_us: Generated<number>;
  memory_mib_ms: Generated<number>;
  disk_byte_ms: Generated<number>;
  net_in_bytes: Generated<number>;
  net_out_bytes: Generated<number>;
  memory_peak_bytes: Generated<number>;
}

export interface SandboxBudgetsTable {
  sandbox_id: string;
  team_id: string;
  cpu_seconds: number | null;
  sandbox_seconds: number | null;
  max_sandboxes: number | null;
  since: number;
  base_cpu_us: number;
  base_running_ms: number;
  exceeded: string | null;
  updated_at: number;
}

export interface EventsTable {
  seq: Generated<number>;
  /** The event's number in its team's stream (migration 28). */
  team_seq: number;
  type: string;
  at: number;
  team_id: string;
  sandbox_id: string | null;
  key_id: string | null;
  cause: string;
  data: string;
}

export interface WebhooksTable {
  id: string;
  team_id: string;
  name: string;
  url: string;
  events: string;
  secret: string;
  created_at: number;
  created_by: string | null;
}

/** Each team's last event number (migration 28): never goes back, so a cursor never points at a newer event. */
/** A counter per audit stream (migration 35): `team_id` '' is the stream of entries without a team. */
export interface AuditSequencesTable {
  team_id: string;
  last_seq: number;
}
export interface EventSequencesTable {
  team_id: string;
  last_seq: number;
}
export interface WebhookDeliveriesTable {
  id: string;
  webhook_id: string;
  event_seq: number;
  event_team_seq: number;
  event_type: string;
  status: string;
  attempts: Generated<string>;
  next_attempt_at: number | null;
  created_at: number;
  claimed_by: string | null;
  claim_expires_at: number | null;
}

export interface ForkTreeReservationsTable {
  budget_sandbox_id: string;
  sandbox_id: string;
  holder: string;
  expires_at: number;
}

export interface QuotaReservationsTable {
  team_id: string;
  sandbox_id: string;
  memory_mb: number;
  holder: string;
  expires_at: number;
}

export interface SchemaMigrationsTable {
  version: number;
  name: string;
  applied_at: number;
}

/** Migration 29: host daemons (docs/design/SCALE-OUT.md). */
export interface HostsTable {
  id: string;
  url: string;
  state: string;
  lease_expires_at: number;
  last_heartbeat_at: number;
  started_at: number;
  memory_mb: number;
  cpus: number;
  slots: number;
  running_sandboxes: Generated<number>;
  memory_reserved_mb: Generated<number>;
  cached_images: Generated<string>;
  pending_uploads: Generated<string>;
  /** Migration 30: `host:port` of the host's ingress listener and SSH gateway; null: none. */
  ingress_address: Generated<string | null>;
  ssh_address: Generated<string | null>;
}

/** Migration 29: capacity held on a host between placement and the host's create. */
export interface HostReservationsTable {
  id: string;
  host_id: string;
  /** Held in all: `sandboxes` × one sandbox's memoryMB and cpuCount. */
  memory_mb: number;
  cpus: number;
  /** Migration 33: how many sandboxes (network slots) it holds: a fork's children; 1 for a create. */
  sandboxes: Generated<number>;
  expires_at: number;
}

/** Migration 33: secrets every process of this store shares, by name (made once by the first to ask). */
export interface ClusterSecretsTable {
  name: string;
  value: string;
}

/** Every table of the store, by name. */
export interface Database {
  sandboxes: SandboxesTable;
  sandbox_metadata: SandboxMetadataTable;
  snapshots: SnapshotsTable;
  templates: TemplatesTable;
  api_keys: ApiKeysTable;
  audit_log: AuditLogTable;
  slots: SlotsTable;
  egress_policies: EgressPoliciesTable;
  egress_log: EgressLogTable;
  ingress_log: IngressLogTable;
  command_log: CommandLogTable;
  access_tokens: AccessTokensTable;
  ssh_keys: SshKeysTable;
  ssh_tokens: SshTokensTable;
  teams: TeamsTable;
  networks: NetworksTable;
  network_members: NetworkMembersTable;
  sandbox_meters: SandboxMetersTable;
  usage_hours: UsageHoursTable;
  sandbox_budgets: SandboxBudgetsTable;
  events: EventsTable;
  event_sequences: EventSequencesTable;
  audit_sequences: AuditSequencesTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  hosts: HostsTable;
  host_reservations: HostReservationsTable;
  cluster_secrets: ClusterSecretsTable;
  quota_reservations: QuotaReservationsTable;
  fork_tree_reservations: ForkTreeReservationsTable;
  schema_migrations: SchemaMigrationsTable;
}

/** A connection pool or an open transaction: every row function takes one, so it composes into a caller's transaction. */
export type Executor = Kysely<Database>;

/** Which database an executor talks to (the few queries that differ ask). */
export type DialectName = 'sqlite' | 'postgres';

/**
 * Run `fn` in a transaction, or inside the caller's when `db` is one already (nested calls share it).
 * On SQLite the one connection is held for the whole transaction; on Postgres a pooled client is.
 */
export function inTransaction<T>(db: Executor, fn: (trx: Executor) => Promise<T>): Promise<T> {
  if (db.isTransaction) return fn(db);
  const dialect = dialectOf(db);
  return db.transaction().execute((trx) => {
    if (dialect) registerDialect(trx, dialect);
    return fn(trx);
  });
}
