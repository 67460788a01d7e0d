/**
 * Core's {@link Store} port over kysely: one implementation for SQLite and Postgres. Every call is one
 * statement or one short transaction on the executor it was given (a pool, or SQLite's one connection);
 * the row modules hold the queries, written once for both databases. A write has happened when its
 * promise resolves. {@link SqliteStore} and {@link openPostgresStore} open it on either database.
 */
import type {
  ApiKeyRecord, AuditQuery, AuditRecord, BudgetRecord, CanonicalEgressPolicy, CommandLogRecord, DeliveryClaim, DeliveryRecord, EventNotifications, TeamRoomRequest, TeamRoomResult, TeamUsage, TreeRoomRequest, TreeRoomResult, EgressLogRecord, EgressPolicyRecord, EventQuery,
  EventRecord, IngressLogRecord, IngressWakes, NetworkMemberRecord, NetworkMembership, NetworkRecord, SandboxActivityRecord, SandboxCount, SandboxMeterRecord,
  HostHeartbeat, HostRecord, HostRegistration, HostState, LostHost, PlacementRequest, PlacementReservation,
  SandboxPage, SandboxPatch, SandboxQuery, SandboxRecord, SlotLease, AdoptedRows, SnapshotPatch, SnapshotRecord, SshKeyRecord, SshTokenRecord, Store, TeamRecord,
  TemplateRecord, UsageSum, UsageSumQuery, UsageWrite, WebhookRecord,
} from '@ramify/core';
import { randomBytes } from 'node:crypto';
import type { SandboxState, TeamQuota } from '@ramify/contracts';
import * as access from './access.js';
import * as tokens from './access-tokens.js';
import * as budgets from './budgets.js';
import { CommandLogRows } from './command-log.js';
import * as egress from './egress.js';
import { DEFAULT_EGRESS_LOG_MAX_ENTRIES, EgressLogRows } from './egress-log.js';
import * as events from './events.js';
import * as hosts from './hosts.js';
import { DEFAULT_INGRESS_LOG_MAX_ENTRIES, IngressLogRows } from './ingress-log.js';
import * as networks from './networks.js';
import * as sandboxes from './sandboxes.js';
import { registerDialect } from './prepared.js';
import { inTransaction, type DialectName, type Executor } from './schema.js';
import * as snapshots from './snapshots.js';
import * as ssh from './ssh.js';
import * as teamRoom from './team-room.js';
import * as treeRoom from './tree-room.js';
import * as teams from './teams.js';
import * as usage from './usage.js';

/** Options both databases share. */
export interface StoreOptions {
  /** Highest network slot number handed out. Default 4096. */
  maxSlots?: number;
  /** Egress log entries kept per sandbox (the newest; older ones are dropped). Default 1000. */
  egressLogMaxEntries?: number;
  /** Ingress log entries kept per sandbox (the newest). Default 1000. */
  ingressLogMaxEntries?: number;
}

/** What only the opener knows: how other processes' appends are heard (Postgres), else none. */
export interface SqlStoreParts {
  eventNotifications?: EventNotifications | null;
}

/** Default upper bound of network slots. */
export const DEFAULT_MAX_SLOTS = 4096;

export class SqlStore implements Store {
  /** The query builder over the database (tests and benches may query it; nothing else should). */
  readonly kysely: Executor;
  readonly dialect: DialectName;
  readonly eventNotifications: EventNotifications | null;
  readonly #maxSlots: number;
  readonly #egressLog: EgressLogRows;
  readonly #ingressLog: IngressLogRows;
  readonly #commands: CommandLogRows;
  #closing: Promise<void> | undefined;

  constructor(kysely: Executor, dialect: DialectName, options: StoreOptions = {}, parts: SqlStoreParts = {}) {
    this.kysely = kysely;
    this.dialect = dialect;
    this.eventNotifications = parts.eventNotifications ?? null;
    registerDialect(kysely, dialect);
    this.#maxSlots = options.maxSlots ?? DEFAULT_MAX_SLOTS;
    this.#egressLog = new EgressLogRows(kysely, options.egressLogMaxEntries ?? DEFAULT_EGRESS_LOG_MAX_ENTRIES);
    this.#ingressLog = new IngressLogRows(kysely, options.ingressLogMaxEntries ?? DEFAULT_INGRESS_LOG_MAX_ENTRIES);
    this.#commands = new CommandLogRows(kysely);
  }

  insertSandbox(record: SandboxRecord): Promise<void> {
    return sandboxes.insertSandbox(this.kysely, record);
  }
  getSandbox(id: string): Promise<SandboxRecord | null> {
    return sandboxes.getSandbox(this.kysely, id);
  }
  updateSandbox(id: string, patch: SandboxPatch): Promise<SandboxRecord> {
    if (patch.state !== 'killed') return sandboxes.updateSandbox(this.kysely, id, patch);
    // A killed sandbox's log can no longer be read: it goes in the write that records the kill.
    return inTransaction(this.kysely, async (trx) => {
      const updated = await sandboxes.updateSandbox(trx, id, patch);
      await this.#egressLog.deleteFor(trx, id);
      await this.#ingressLog.deleteFor(trx, id);
      await ssh.deleteSshTokensOf(trx, id);
      await networks.deleteMembershipsOf(trx, id);
      return updated;
    });
  }
  listSandboxes(query: SandboxQuery): Promise<SandboxPage> {
    return sandboxes.listSandboxes(this.kysely, query);
  }
  listResourceHolders(teamId: string, states: readonly SandboxState[]): Promise<Array<{ id: string; memoryMB: number }>> {
    return sandboxes.resourceHolders(this.kysely, teamId, states);
  }
  async countSandboxes(): Promise<SandboxCount[]> {
    const rows = await this.kysely
      .selectFrom('sandboxes')
      .select((eb) => ['state', 'runtime', eb.fn.countAll<number>().as('count')])
      .where('state', '!=', 'killed')
      .groupBy(['state', 'runtime'])
      .execute();
    return rows.map((r) => ({ state: r.state as SandboxCount['state'], runtime: r.runtime as SandboxCount['runtime'], count: Number(r.count) }));
  }
  recordActivity(entries: readonly SandboxActivityRecord[]): Promise<void> {
    return sandboxes.recordActivity(this.kysely, entries);
  }
  treeRoots(sandboxIds: readonly string[]): Promise<Map<string, string>> {
    return sandboxes.roots(this.kysely, sandboxIds);
  }
  subtree(rootId: string): Promise<SandboxRecord[]> {
    return sandboxes.subtree(this.kysely, rootId);
  }

  insertTeam(record: TeamRecord): Promise<void> {
    return teams.insertTeam(this.kysely, record);
  }
  getTeam(id: string): Promise<TeamRecord | null> {
    return teams.getTeam(this.kysely, id);
  }
  listTeams(): Promise<TeamRecord[]> {
    return teams.listTeams(this.kysely);
  }
  setTeamQuota(id: string, quota: Partial<TeamQuota>): Promise<TeamRecord> {
    return teams.setTeamQuota(this.kysely, id, quota);
  }
  reserveTeamRoom(request: TeamRoomRequest): Promise<TeamRoomResult | null> {
    return teamRoom.reserveTeamRoom(this.kysely, request);
  }
  renewTeamRoom(teamId: string, sandboxIds: readonly string[], leaseMs: number): Promise<void> {
    return teamRoom.renewTeamRoom(this.kysely, teamId, sandboxIds, leaseMs);
  }
  releaseTeamRoom(teamId: string, sandboxIds: readonly string[]): Promise<void> {
    return teamRoom.releaseTeamRoom(this.kysely, teamId, sandboxIds);
  }
  teamUsage(teamId: string, holdingStates: readonly SandboxState[]): Promise<TeamUsage> {
    return teamRoom.teamUsage(this.kysely, teamId, holdingStates);
  }
  reserveTreeRoom(request: TreeRoomRequest): Promise<TreeRoomResult> {
    return treeRoom.reserveTreeRoom(this.kysely, request);
  }
  renewTreeRoom(childIds: readonly string[], leaseMs: number): Promise<void> {
    return treeRoom.renewTreeRoom(this.kysely, childIds, leaseMs);
  }
  releaseTreeRoom(childIds: readonly string[]): Promise<void> {
    return treeRoom.releaseTreeRoom(this.kysely, childIds);
  }

  insertSnapshot(record: SnapshotRecord): Promise<void> {
    return snapshots.insertSnapshot(this.kysely, record);
  }
  getSnapshot(id: string): Promise<SnapshotRecord | null> {
    return snapshots.getSnapshot(this.kysely, id);
  }
  findSnapshotByName(name: string, teamId: string): Promise<SnapshotRecord | null> {
    return snapshots.snapshotByName(this.kysely, name, teamId);
  }
  updateSnapshot(id: string, patch: SnapshotPatch): Promise<SnapshotRecord> {
    return snapshots.updateSnapshot(this.kysely, id, patch);
  }
  listSnapshots(filter?: { sandboxId?: string; kinds?: SnapshotRecord['kind'][] }): Promise<SnapshotRecord[]> {
    return snapshots.listSnapshots(this.kysely, filter);
  }
  deleteSnapshot(id: string): Promise<void> {
    return snapshots.deleteSnapshot(this.kysely, id);
  }
  async snapshotReferences(snapshotId: string): Promise<{ pausedBy: string[]; sourceOf: string[]; templates: string[] }> {
    return { ...(await sandboxes.references(this.kysely, snapshotId)), templates: await snapshots.templatesUsingSnapshot(this.kysely, snapshotId) };
  }

  putTemplate(record: TemplateRecord): Promise<void> {
    return snapshots.putTemplate(this.kysely, record);
  }
  getTemplate(id: string): Promise<TemplateRecord | null> {
    return snapshots.getTemplate(this.kysely, id);
  }
  findTemplateByName(name: string, teamId: string): Promise<TemplateRecord | null> {
    return snapshots.templateByName(this.kysely, name, teamId);
  }
  listTemplates(): Promise<TemplateRecord[]> {
    return snapshots.listTemplates(this.kysely);
  }
  deleteTemplate(id: string): Promise<void> {
    return snapshots.deleteTemplate(this.kysely, id);
  }

  insertApiKey(record: ApiKeyRecord): Promise<void> {
    return access.insertApiKey(this.kysely, record);
  }
  findApiKeyByHash(hash: string): Promise<ApiKeyRecord | null> {
    return access.apiKeyByHash(this.kysely, hash);
  }
  getApiKey(id: string): Promise<ApiKeyRecord | null> {
    return access.getApiKey(this.kysely, id);
  }
  listApiKeys(filter?: { teamId?: string }): Promise<ApiKeyRecord[]> {
    return access.listApiKeys(this.kysely, filter);
  }
  touchApiKey(id: string, at: number): Promise<void> {
    return access.touchApiKey(this.kysely, id, at);
  }
  revokeApiKey(id: string, at: number): Promise<void> {
    return access.revokeApiKey(this.kysely, id, at);
  }
  appendAudit(entry: Omit<AuditRecord, 'seq' | 'teamSeq'>): Promise<Pick<AuditRecord, 'seq' | 'teamSeq'>> {
    return access.appendAudit(this.kysely, entry);
  }
  listAudit(query: AuditQuery): Promise<AuditRecord[]> {
    return access.listAudit(this.kysely, query);
  }

  allocateSlot(sandboxId: string, hostId: string): Promise<number> {
    return access.allocateSlot(this.kysely, this.dialect, sandboxId, hostId, this.#maxSlots);
  }
  releaseSlot(sandboxId: string): Promise<void> {
    return access.releaseSlot(this.kysely, sandboxId);
  }
  listSlots(hostId: string): Promise<SlotLease[]> {
    return access.listSlots(this.kysely, hostId);
  }
  adoptUnhostedRows(hostId: string): Promise<AdoptedRows> {
    return access.adoptUnhostedRows(this.kysely, hostId);
  }

  getEgressPolicy(sandboxId: string): Promise<EgressPolicyRecord | null> {
    return egress.getEgressPolicy(this.kysely, sandboxId);
  }
  putEgressPolicy(sandboxId: string, policy: CanonicalEgressPolicy, at: number): Promise<EgressPolicyRecord> {
    return egress.putEgressPolicy(this.kysely, sandboxId, policy, at);
  }
  deleteEgressPolicy(sandboxId: string): Promise<void> {
    return egress.deleteEgressPolicy(this.kysely, sandboxId);
  }
  ensureAccessToken(sandboxId: string, candidate: string, at: number): Promise<string> {
    return tokens.ensureAccessToken(this.kysely, sandboxId, candidate, at);
  }
  getAccessToken(sandboxId: string): Promise<string | null> {
    return tokens.getAccessToken(this.kysely, sandboxId);
  }

  appendEgressLog(entries: readonly EgressLogRecord[]): Promise<number> {
    return this.#egressLog.append(entries);
  }
  listEgressLog(sandboxId: string, limit: number): Promise<EgressLogRecord[]> {
    return this.#egressLog.list(sandboxId, limit);
  }
  appendIngressLog(entries: readonly IngressLogRecord[]): Promise<number> {
    return this.#ingressLog.append(entries);
  }
  listIngressLog(sandboxId: string, limit: number): Promise<IngressLogRecord[]> {
    return this.#ingressLog.list(sandboxId, limit);
  }
  recordIngressWake(sandboxId: string, at: number): Promise<void> {
    return this.#ingressLog.recordWake(sandboxId, at);
  }
  getIngressWakes(sandboxId: string): Promise<IngressWakes> {
    return this.#ingressLog.wakes(sandboxId);
  }

  insertSshKey(record: SshKeyRecord): Promise<void> {
    return ssh.insertSshKey(this.kysely, record);
  }
  listSshKeys(teamId?: string): Promise<SshKeyRecord[]> {
    return ssh.listSshKeys(this.kysely, teamId);
  }
  findSshKeyByFingerprint(fingerprint: string, teamId: string): Promise<SshKeyRecord | null> {
    return ssh.sshKeyByFingerprint(this.kysely, fingerprint, teamId);
  }
  deleteSshKey(id: string, teamId: string): Promise<boolean> {
    return ssh.deleteSshKey(this.kysely, id, teamId);
  }
  insertSshToken(record: SshTokenRecord): Promise<void> {
    return ssh.insertSshToken(this.kysely, record);
  }
  findSshToken(hash: string): Promise<SshTokenRecord | null> {
    return ssh.sshTokenByHash(this.kysely, hash);
  }
  deleteSshToken(hash: string): Promise<boolean> {
    return ssh.deleteSshToken(this.kysely, hash);
  }

  insertNetwork(record: NetworkRecord): Promise<void> {
    return networks.insertNetwork(this.kysely, record);
  }
  getNetwork(id: string): Promise<NetworkRecord | null> {
    return networks.getNetwork(this.kysely, id);
  }
  findNetworkByName(teamId: string, name: string): Promise<NetworkRecord | null> {
    return networks.networkByName(this.kysely, teamId, name);
  }
  listNetworks(teamId: string): Promise<NetworkRecord[]> {
    return networks.listNetworks(this.kysely, teamId);
  }
  deleteNetwork(id: string): Promise<void> {
    return networks.deleteNetwork(this.kysely, id);
  }
  addNetworkMember(member: NetworkMemberRecord): Promise<void> {
    return networks.addNetworkMember(this.kysely, member);
  }
  removeNetworkMember(networkId: string, sandboxId: string): Promise<boolean> {
    return networks.removeNetworkMember(this.kysely, networkId, sandboxId);
  }
  networksOfSandbox(sandboxId: string): Promise<NetworkMembership[]> {
    return networks.networksOfSandbox(this.kysely, sandboxId);
  }
  membersOfNetwork(networkId: string): Promise<NetworkMembership[]> {
    return networks.membersOfNetwork(this.kysely, networkId);
  }

  appendEvent(event: Omit<EventRecord, 'seq' | 'teamSeq'>): Promise<EventRecord> {
    return events.appendEvent(this.kysely, event);
  }
  listEvents(query: EventQuery): Promise<EventRecord[]> {
    return events.listEvents(this.kysely, query);
  }
  getEvent(seq: number): Promise<EventRecord | null> {
    return events.getEvent(this.kysely, seq);
  }
  lastEventTeamSeq(teamId: string): Promise<number> {
    return events.lastEventTeamSeq(this.kysely, teamId);
  }
  pruneEvents(before: number): Promise<number> {
    return events.pruneEvents(this.kysely, before);
  }
  insertWebhook(record: WebhookRecord): Promise<void> {
    return events.insertWebhook(this.kysely, record);
  }
  getWebhook(id: string): Promise<WebhookRecord | null> {
    return events.getWebhook(this.kysely, id);
  }
  listWebhooks(teamId?: string): Promise<WebhookRecord[]> {
    return events.listWebhooks(this.kysely, teamId);
  }
  deleteWebhook(id: string): Promise<boolean> {
    return events.deleteWebhook(this.kysely, id);
  }
  eventPositions(): Promise<Array<{ teamId: string; lastTeamSeq: number }>> {
    return events.eventPositions(this.kysely);
  }
  insertDelivery(record: DeliveryRecord, claim?: DeliveryClaim): Promise<boolean> {
    return events.insertDelivery(this.kysely, record, claim);
  }
  updateDelivery(record: Pick<DeliveryRecord, 'id' | 'status' | 'attempts' | 'nextAttemptAt'>, claim?: DeliveryClaim): Promise<void> {
    return events.updateDelivery(this.kysely, record, claim);
  }
  claimDeliveries(claim: DeliveryClaim, limit: number): Promise<DeliveryRecord[]> {
    return events.claimDeliveries(this.kysely, claim, limit);
  }
  renewDeliveryClaim(id: string, claim: DeliveryClaim): Promise<boolean> {
    return events.renewDeliveryClaim(this.kysely, id, claim);
  }
  listDeliveries(webhookId: string, limit: number): Promise<DeliveryRecord[]> {
    return events.listDeliveries(this.kysely, webhookId, limit);
  }
  pendingDeliveries(limit: number): Promise<DeliveryRecord[]> {
    return events.pendingDeliveries(this.kysely, limit);
  }
  appendCommandLog(entries: readonly CommandLogRecord[]): Promise<number> {
    return this.#commands.append(entries);
  }
  listCommandLog(sandboxId: string, limit: number): Promise<CommandLogRecord[]> {
    return this.#commands.list(sandboxId, limit);
  }
  pruneCommandLog(before: number): Promise<number> {
    return this.#commands.prune(before);
  }

  getMeters(sandboxIds: readonly string[]): Promise<SandboxMeterRecord[]> {
    return usage.getMeters(this.kysely, sandboxIds);
  }
  recordUsage(writes: readonly UsageWrite[]): Promise<void> {
    return usage.recordUsage(this.kysely, writes);
  }
  sumUsage(query: UsageSumQuery): Promise<UsageSum[]> {
    return usage.sumUsage(this.kysely, this.dialect, query);
  }
  putBudget(record: BudgetRecord): Promise<void> {
    return budgets.putBudget(this.kysely, record);
  }
  getBudget(sandboxId: string): Promise<BudgetRecord | null> {
    return budgets.getBudget(this.kysely, sandboxId);
  }
  deleteBudget(sandboxId: string): Promise<void> {
    return budgets.deleteBudget(this.kysely, sandboxId);
  }
  budgetsCovering(sandboxIds: readonly string[]): Promise<BudgetRecord[]> {
    return budgets.budgetsCovering(this.kysely, sandboxIds);
  }

  registerHost(registration: HostRegistration): Promise<HostRecord> {
    return hosts.registerHost(this.kysely, registration);
  }
  heartbeatHost(id: string, heartbeat: HostHeartbeat): Promise<HostRecord> {
    return hosts.heartbeatHost(this.kysely, id, heartbeat);
  }
  setHostState(id: string, state: HostState): Promise<HostRecord> {
    return hosts.setHostState(this.kysely, id, state);
  }
  getHost(id: string): Promise<HostRecord | null> {
    return hosts.getHost(this.kysely, id);
  }
  listHosts(): Promise<HostRecord[]> {
    return hosts.listHosts(this.kysely);
  }
  databaseNow(): Promise<number> {
    return hosts.databaseNow(this.kysely);
  }
  reserveHost(request: PlacementRequest): Promise<PlacementReservation> {
    return hosts.reserveHost(this.kysely, request);
  }
  getReservation(id: string): Promise<PlacementReservation | null> {
    return hosts.getReservation(this.kysely, id);
  }
  releaseReservation(id: string): Promise<void> {
    return hosts.releaseReservation(this.kysely, id);
  }
  expireHosts(): Promise<LostHost[]> {
    return hosts.expireHosts(this.kysely);
  }
  clusterSecret(name: string): Promise<string> {
    return hosts.clusterSecret(this.kysely, name, randomBytes(32).toString('hex'));
  }

  /** Close the connection (SQLite) or the pool (Postgres); a second call does nothing. */
  async close(): Promise<void> {
    this.#closing ??= this.kysely.destroy();
    await this.#closing;
  }
}
