/**
 * The embedded SQLite implementation of core's {@link Store} port (better-sqlite3: WAL journal, foreign
 * keys, numbered migrations). One daemon process owns the file. Calls are synchronous underneath (each
 * one statement or one short transaction) and exposed as promises to match the port.
 */
import type {
  ApiKeyRecord,
  CommandLogRecord,
  DeliveryRecord,
  EventQuery,
  EventRecord,
  SandboxCount,
  WebhookRecord,
  AuditQuery,
  AuditRecord,
  CanonicalEgressPolicy,
  EgressLogRecord,
  EgressPolicyRecord,
  IngressLogRecord,
  IngressWakes,
  NetworkMemberRecord,
  NetworkMembership,
  NetworkRecord,
  SandboxActivityRecord,
  SandboxPage,
  SandboxPatch,
  SandboxQuery,
  SandboxRecord,
  SlotLease,
  AdoptedRows,
  SnapshotPatch,
  SnapshotRecord,
  SshKeyRecord,
  SshTokenRecord,
  Store,
  TeamRecord,
  TemplateRecord,
  BudgetRecord,
  SandboxMeterRecord,
  UsageSum,
  UsageSumQuery,
  UsageWrite,
} from '@ramify/core';
import type { SandboxState, TeamQuota } from '@ramify/contracts';
import { ApiKeyRows, AuditRows, SlotRows } from './access.js';
import { openDatabase, type Db } from './db.js';
import { AccessTokenRows } from './access-tokens.js';
import { EgressPolicyRows } from './egress.js';
import { DEFAULT_EGRESS_LOG_MAX_ENTRIES, EgressLogRows } from './egress-log.js';
import { DEFAULT_INGRESS_LOG_MAX_ENTRIES, IngressLogRows } from './ingress-log.js';
import { SandboxRows } from './sandboxes.js';
import { SnapshotRows, TemplateRows } from './snapshots.js';
import { SshRows } from './ssh.js';
import { TeamRows } from './teams.js';
import { NetworkRows } from './networks.js';
import { EventRows, WebhookRows } from './events.js';
import { CommandLogRows } from './command-log.js';
import { UsageRows } from './usage.js';
import { BudgetRows } from './budgets.js';

export interface SqliteStoreOptions {
  /** Database file (created with its directory when absent), or `:memory:`. */
  path: string;
  /** Highest network slot number handed out. Default 4096. */
  maxSlots?: number;
  /** Egress log entries kept per sandbox (the newest; older ones are dropped). Default 1000. */
  egressLogMaxEntries?: number;
  /** Ingress log entries kept per sandbox (the newest). Default 1000. */
  ingressLogMaxEntries?: number;
}

/** Default upper bound of network slots. */
export const DEFAULT_MAX_SLOTS = 4096;

export class SqliteStore implements Store {
  readonly db: Db;
  readonly #sandboxes: SandboxRows;
  readonly #snapshots: SnapshotRows;
  readonly #templates: TemplateRows;
  readonly #keys: ApiKeyRows;
  readonly #audit: AuditRows;
  readonly #slots: SlotRows;
  readonly #egress: EgressPolicyRows;
  readonly #egressLog: EgressLogRows;
  readonly #ingressLog: IngressLogRows;
  readonly #tokens: AccessTokenRows;
  readonly #ssh: SshRows;
  readonly #teams: TeamRows;
  readonly #networks: NetworkRows;
  readonly #events: EventRows;
  readonly #webhooks: WebhookRows;
  readonly #commands: CommandLogRows;
  readonly #usage: UsageRows;
  readonly #budgets: BudgetRows;

  /** Open (and migrate) the database. @throws RamifyError `INTERNAL` for a schema newer than this code. */
  constructor(options: SqliteStoreOptions) {
    this.db = openDatabase(options.path);
    this.#sandboxes = new SandboxRows(this.db);
    this.#snapshots = new SnapshotRows(this.db);
    this.#templates = new TemplateRows(this.db);
    this.#keys = new ApiKeyRows(this.db);
    this.#audit = new AuditRows(this.db);
    this.#slots = new SlotRows(this.db, options.maxSlots ?? DEFAULT_MAX_SLOTS);
    this.#egress = new EgressPolicyRows(this.db);
    this.#egressLog = new EgressLogRows(this.db, options.egressLogMaxEntries ?? DEFAULT_EGRESS_LOG_MAX_ENTRIES);
    this.#tokens = new AccessTokenRows(this.db);
    this.#ssh = new SshRows(this.db);
    this.#teams = new TeamRows(this.db);
    this.#networks = new NetworkRows(this.db);
    this.#usage = new UsageRows(this.db);
    this.#budgets = new BudgetRows(this.db);
    this.#ingressLog = new IngressLogRows(this.db, options.ingressLogMaxEntries ?? DEFAULT_INGRESS_LOG_MAX_ENTRIES);
    this.#events = new EventRows(this.db);
    this.#webhooks = new WebhookRows(this.db);
    this.#commands = new CommandLogRows(this.db);
  }

  async insertSandbox(record: SandboxRecord): Promise<void> {
    this.#sandboxes.insert(record);
  }
  async getSandbox(id: string): Promise<SandboxRecord | null> {
    return this.#sandboxes.get(id);
  }
  async updateSandbox(id: string, patch: SandboxPatch): Promise<SandboxRecord> {
    return this.db.transaction(() => {
      const updated = this.#sandboxes.update(id, patch);
      // A killed sandbox's log can no longer be read: it goes in the write that records the kill.
      if (patch.state === 'killed') {
        this.#egressLog.deleteFor(id);
        this.#ingressLog.deleteFor(id);
        this.#ssh.deleteTokensOf(id);
        this.#networks.deleteMembershipsOf(id);
      }
      return updated;
    })();
  }
  async listSandboxes(query: SandboxQuery): Promise<SandboxPage> {
    return this.#sandboxes.list(query);
  }
  async listResourceHolders(teamId: string, states: readonly SandboxState[]): Promise<Array<{ id: string; memoryMB: number }>> {
    return this.#sandboxes.resourceHolders(teamId, states);
  }

  async insertTeam(record: TeamRecord): Promise<void> {
    this.#teams.insert(record);
  }
  async getTeam(id: string): Promise<TeamRecord | null> {
    return this.#teams.get(id);
  }
  async listTeams(): Promise<TeamRecord[]> {
    return this.#teams.list();
  }
  async setTeamQuota(id: string, quota: TeamQuota): Promise<TeamRecord> {
    return this.#teams.setQuota(id, quota);
  }

  async insertSnapshot(record: SnapshotRecord): Promise<void> {
    this.#snapshots.insert(record);
  }
  async getSnapshot(id: string): Promise<SnapshotRecord | null> {
    return this.#snapshots.get(id);
  }
  async findSnapshotByName(name: string, teamId: string): Promise<SnapshotRecord | null> {
    return this.#snapshots.byName(name, teamId);
  }
  async updateSnapshot(id: string, patch: SnapshotPatch): Promise<SnapshotRecord> {
    return this.#snapshots.update(id, patch);
  }
  async listSnapshots(filter?: { sandboxId?: string; kinds?: SnapshotRecord['kind'][] }): Promise<SnapshotRecord[]> {
    return this.#snapshots.list(filter);
  }
  async deleteSnapshot(id: string): Promise<void> {
    this.#snapshots.delete(id);
  }
  async snapshotReferences(snapshotId: string): Promise<{ pausedBy: string[]; sourceOf: string[]; templates: string[] }> {
    return { ...this.#sandboxes.references(snapshotId), templates: this.#templates.usingSnapshot(snapshotId) };
  }

  async putTemplate(record: TemplateRecord): Promise<void> {
    this.#templates.put(record);
  }
  async getTemplate(id: string): Promise<TemplateRecord | null> {
    return this.#templates.get(id);
  }
  async findTemplateByName(name: string, teamId: string): Promise<TemplateRecord | null> {
    return this.#templates.byName(name, teamId);
  }
  async listTemplates(): Promise<TemplateRecord[]> {
    return this.#templates.list();
  }
  async deleteTemplate(id: string): Promise<void> {
    this.#templates.delete(id);
  }

  async insertApiKey(record: ApiKeyRecord): Promise<void> {
    this.#keys.insert(record);
  }
  async findApiKeyByHash(hash: string): Promise<ApiKeyRecord | null> {
    return this.#keys.byHash(hash);
  }
  async getApiKey(id: string): Promise<ApiKeyRecord | null> {
    return this.#keys.get(id);
  }
  async listApiKeys(filter?: { teamId?: string }): Promise<ApiKeyRecord[]> {
    return this.#keys.list(filter);
  }
  async touchApiKey(id: string, at: number): Promise<void> {
    this.#keys.touch(id, at);
  }
  async revokeApiKey(id: string, at: number): Promise<void> {
    this.#keys.revoke(id, at);
  }

  async appendAudit(entry: Omit<AuditRecord, 'id'>): Promise<number> {
    return this.#audit.append(entry);
  }
  async listAudit(query: AuditQuery): Promise<AuditRecord[]> {
    return this.#audit.list(query);
  }

  async allocateSlot(sandboxId: string, hostId: string): Promise<number> {
    return this.#slots.allocate(sandboxId, hostId);
  }
  async releaseSlot(sandboxId: string): Promise<void> {
    this.#slots.release(sandboxId);
  }
  async listSlots(hostId: string): Promise<SlotLease[]> {
    return this.#slots.list(hostId);
  }
  async adoptUnhostedRows(hostId: string): Promise<AdoptedRows> {
    return this.db.transaction(() => ({
      sandboxes: this.db.prepare('UPDATE sandboxes SET host_id = ? WHERE host_id IS NULL').run(hostId).changes,
      snapshots: this.db.prepare('UPDATE snapshots SET host_id = ? WHERE host_id IS NULL').run(hostId).changes,
      slots: this.db.prepare("UPDATE slots SET host_id = ? WHERE host_id = ''").run(hostId).changes,
    }))();
  }

  async getEgressPolicy(sandboxId: string): Promise<EgressPolicyRecord | null> {
    return this.#egress.get(sandboxId);
  }
  async putEgressPolicy(sandboxId: string, policy: CanonicalEgressPolicy, at: number): Promise<EgressPolicyRecord> {
    return this.#egress.put(sandboxId, policy, at);
  }
  async deleteEgressPolicy(sandboxId: string): Promise<void> {
    this.#egress.delete(sandboxId);
  }

  async ensureAccessToken(sandboxId: string, candidate: string, at: number): Promise<string> {
    return this.#tokens.ensure(sandboxId, candidate, at);
  }
  async getAccessToken(sandboxId: string): Promise<string | null> {
    return this.#tokens.get(sandboxId);
  }

  async appendEgressLog(entries: readonly EgressLogRecord[]): Promise<number> {
    return this.#egressLog.append(entries);
  }
  async listEgressLog(sandboxId: string, limit: number): Promise<EgressLogRecord[]> {
    return this.#egressLog.list(sandboxId, limit);
  }

  async appendIngressLog(entries: readonly IngressLogRecord[]): Promise<number> {
    return this.#ingressLog.append(entries);
  }
  async listIngressLog(sandboxId: string, limit: number): Promise<IngressLogRecord[]> {
    return this.#ingressLog.list(sandboxId, limit);
  }
  async recordIngressWake(sandboxId: string, at: number): Promise<void> {
    this.#ingressLog.recordWake(sandboxId, at);
  }
  async getIngressWakes(sandboxId: string): Promise<IngressWakes> {
    return this.#ingressLog.wakes(sandboxId);
  }

  async recordActivity(entries: readonly SandboxActivityRecord[]): Promise<void> {
    this.#sandboxes.recordActivity(entries);
  }

  async insertSshKey(record: SshKeyRecord): Promise<void> {
    this.#ssh.insertKey(record);
  }
  async listSshKeys(teamId?: string): Promise<SshKeyRecord[]> {
    return this.#ssh.listKeys(teamId);
  }
  async findSshKeyByFingerprint(fingerprint: string, teamId: string): Promise<SshKeyRecord | null> {
    return this.#ssh.keyByFingerprint(fingerprint, teamId);
  }
  async deleteSshKey(id: string, teamId: string): Promise<boolean> {
    return this.#ssh.deleteKey(id, teamId);
  }
  async insertSshToken(record: SshTokenRecord): Promise<void> {
    this.#ssh.insertToken(record);
  }
  async findSshToken(hash: string): Promise<SshTokenRecord | null> {
    return this.#ssh.tokenByHash(hash);
  }

  async insertNetwork(record: NetworkRecord): Promise<void> {
    this.#networks.insert(record);
  }
  async getNetwork(id: string): Promise<NetworkRecord | null> {
    return this.#networks.get(id);
  }
  async findNetworkByName(teamId: string, name: string): Promise<NetworkRecord | null> {
    return this.#networks.byName(teamId, name);
  }
  async listNetworks(teamId: string): Promise<NetworkRecord[]> {
    return this.#networks.list(teamId);
  }
  async deleteNetwork(id: string): Promise<void> {
    this.#networks.delete(id);
  }
  async addNetworkMember(member: NetworkMemberRecord): Promise<void> {
    this.#networks.addMember(member);
  }
  async removeNetworkMember(networkId: string, sandboxId: string): Promise<boolean> {
    return this.#networks.removeMember(networkId, sandboxId);
  }
  async networksOfSandbox(sandboxId: string): Promise<NetworkMembership[]> {
    return this.#networks.ofSandbox(sandboxId);
  }
  async membersOfNetwork(networkId: string): Promise<NetworkMembership[]> {
    return this.#networks.members(networkId);
  }

  async appendEvent(event: Omit<EventRecord, 'seq'>): Promise<EventRecord> {
    return this.#events.append(event);
  }
  async listEvents(query: EventQuery): Promise<EventRecord[]> {
    return this.#events.list(query);
  }
  async pruneEvents(before: number): Promise<number> {
    return this.#events.prune(before);
  }
  async insertWebhook(record: WebhookRecord): Promise<void> {
    this.#webhooks.insert(record);
  }
  async getWebhook(id: string): Promise<WebhookRecord | null> {
    return this.#webhooks.get(id);
  }
  async listWebhooks(teamId?: string): Promise<WebhookRecord[]> {
    return this.#webhooks.list(teamId);
  }
  async deleteWebhook(id: string): Promise<boolean> {
    return this.#webhooks.delete(id);
  }
  async insertDelivery(record: DeliveryRecord): Promise<void> {
    this.#webhooks.insertDelivery(record);
  }
  async updateDelivery(record: Pick<DeliveryRecord, 'id' | 'status' | 'attempts' | 'nextAttemptAt'>): Promise<void> {
    this.#webhooks.updateDelivery(record);
  }
  async listDeliveries(webhookId: string, limit: number): Promise<DeliveryRecord[]> {
    return this.#webhooks.listDeliveries(webhookId, limit);
  }
  async pendingDeliveries(limit: number): Promise<DeliveryRecord[]> {
    return this.#webhooks.pending(limit);
  }
  async appendCommandLog(entries: readonly CommandLogRecord[]): Promise<number> {
    return this.#commands.append(entries);
  }
  async listCommandLog(sandboxId: string, limit: number): Promise<CommandLogRecord[]> {
    return this.#commands.list(sandboxId, limit);
  }
  async pruneCommandLog(before: number): Promise<number> {
    return this.#commands.prune(before);
  }
  async countSandboxes(): Promise<SandboxCount[]> {
    return this.db.prepare("SELECT state, runtime, COUNT(*) AS count FROM sandboxes WHERE state != 'killed' GROUP BY state, runtime").all() as SandboxCount[];
  }
  async getMeters(sandboxIds: readonly string[]): Promise<SandboxMeterRecord[]> {
    return this.#usage.meters(sandboxIds);
  }
  async recordUsage(writes: readonly UsageWrite[]): Promise<void> {
    this.#usage.record(writes);
  }
  async sumUsage(query: UsageSumQuery): Promise<UsageSum[]> {
    return this.#usage.sum(query);
  }
  async treeRoots(sandboxIds: readonly string[]): Promise<Map<string, string>> {
    return this.#sandboxes.roots(sandboxIds);
  }
  async subtree(rootId: string): Promise<SandboxRecord[]> {
    return this.#sandboxes.subtree(rootId);
  }
  async putBudget(record: BudgetRecord): Promise<void> {
    this.#budgets.put(record);
  }
  async getBudget(sandboxId: string): Promise<BudgetRecord | null> {
    return this.#budgets.get(sandboxId);
  }
  async deleteBudget(sandboxId: string): Promise<void> {
    this.#budgets.delete(sandboxId);
  }
  async budgetsCovering(sandboxIds: readonly string[]): Promise<BudgetRecord[]> {
    return this.#budgets.covering(sandboxIds);
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
