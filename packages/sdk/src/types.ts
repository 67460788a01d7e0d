/**
 * Data shapes the SDK returns. They are the API's own schemas from `@ramify/contracts` (re-exported
 * as types), so what the SDK hands you is exactly what the daemon sent.
 */
export type {
  SandboxInfo, SandboxState, SnapshotInfo, TemplateInfo, TemplateSpec, TemplateBuildEvent, FileInfo,
  ProcessInfo, CommandResult, CommandCapture, CapturedStream, RuntimeName, TimeoutAction, AuditEntry, StreamOffsets, StreamControl,
  EgressPolicyInfo, EgressPolicyRequest, EgressMode, EgressLogEntry, SnapshotEgress,
  AutoPause, IngressLogEntry, IngressLogResponse, ExposedPort, IngressEndpoint, PortAccess, PortInfo, PortSpec, PortsInfo, PortUrlInfo, SnapshotIngress,
  SshKeyInfo, SshAccessInfo,
  TeamInfo, TeamQuota, SetTeamQuotaRequest, ApiKeyInfo, ApiKeyRole, ApiKeyStatus, CreatedApiKey,
  NetworkInfo, NetworkMemberInfo, NetworkJoinRequest, SandboxNetworkInfo, SnapshotNetworks, EgressPeer,
  SandboxEvent, EventType, EventCause, ListEventsResponse, TimelineEntry, CommandLogEntry, WebhookInfo, CreatedWebhook, WebhookDelivery, DeliveryAttempt, WebhookPayload,
  Budget, BudgetInfo, BudgetLimit, UsageFigures, UsageRow, UsageResponse, UsageGroupBy, SandboxMetric, SandboxTreeNode, SandboxTreeResponse,
} from '@ramify/contracts';
