/**
 * @ramify/core: Ramify's domain. Ports (runtime, network, snapshot storage, store, clock, agent
 * connector, template builder, logger), the sandbox state machine, and one use-case per file.
 * No HTTP, no child processes, no SQL.
 */
export * from './ports/runtime.js';
export * from './ports/network.js';
export * from './ports/snapshot-storage.js';
export * from './ports/store.js';
export * from './ports/clock.js';
export * from './ports/agent.js';
export * from './ports/logger.js';
export * from './ports/template-builder.js';
export * from './ports/egress.js';
export * from './ports/private-networks.js';

export * from './ids.js';
export { networkFor, runtimeFor, DEFAULT_CORE_OPTIONS, type Core, type CoreDeps, type CoreOptions } from './context.js';
export { createCore, closeCoreSinks } from './core.js';
export * from './ports/event-store.js';
export * from './ports/hosts.js';
export * from './ports/team-room.js';
export * from './ports/tree-room.js';
export * from './placement/placement.js';
export * from './placement/host-loss.js';
export * from './ports/telemetry.js';
export * from './ports/webhook-sender.js';

export * from './lifecycle/state-machine.js';
export { KeyedLock } from './lifecycle/locks.js';
export { AgentSessions, type AgentSessionsOptions } from './lifecycle/agent-sessions.js';
export {
  SandboxEvents, SANDBOX_EVENT_KINDS, type AnySandboxEvent, type SandboxBudgetEvent, type SandboxCheckpointingEvent, type SandboxEventKind, type SandboxEventMap, type SandboxForkedEvent,
  type SandboxIngressEvent, type SandboxOomEvent, type SandboxAgentLostEvent, type SandboxInstanceLostEvent, type InstanceLossReason, type SandboxSnapshottedEvent, type SandboxStateEvent, type SandboxTimedOutEvent,
} from './lifecycle/events.js';
export { OOM_AUDIT_ACTION, recordAgentEvent } from './lifecycle/oom.js';
export { loadSandbox, transition, toSandboxInfo, toSnapshotInfo, toTemplateInfo } from './lifecycle/records.js';
export { waitForQuietNetwork } from './lifecycle/quiet-network.js';
export { createSandbox } from './lifecycle/create.js';
export { getSandbox } from './lifecycle/get.js';
export { listSandboxes, parseListQuery, type ListSandboxesInput } from './lifecycle/list.js';
export { killSandbox } from './lifecycle/kill.js';
export { pauseSandbox } from './lifecycle/pause.js';
export { resumeSandbox, type ResumeInput } from './lifecycle/resume.js';
export { forkSandbox, type ForkInput } from './lifecycle/fork.js';
export { snapshotSandbox, type SnapshotInput } from './lifecycle/snapshot.js';
export { setSandboxTimeout } from './lifecycle/set-timeout.js';
export { TimeoutScheduler } from './lifecycle/timeouts.js';
export { LivenessMonitor } from './lifecycle/liveness.js';
export { prewarmFreeSlots } from './lifecycle/prewarm.js';
export { WarmPool, type PooledSandbox, type WarmPoolStats } from './pool/warm-pool.js';
export { reconcile, type ReconcileReport } from './lifecycle/reconcile.js';
export type { ReconcileOutcome } from './lifecycle/reconcile-sandbox.js';

export * from './sandbox/commands.js';
export * from './sandbox/terminals.js';
export * from './sandbox/files.js';
export * from './sandbox/watches.js';
export { agentFor } from './sandbox/agent-access.js';

export * from './egress/policy.js';
export { setEgressPolicy } from './egress/set-egress.js';
export { getEgressPolicy, toEgressPolicyInfo, type SandboxEgressPolicy } from './egress/get-egress.js';
export { getEgressLog, toEgressLogEntry, EGRESS_LOG_DEFAULT_LIMIT, EGRESS_LOG_MAX_LIMIT, type EgressLogInput } from './egress/egress-log.js';
export { BufferedEgressLog, DEFAULT_EGRESS_LOG_BUFFER, type BufferedEgressLogOptions, type EgressLogStats } from './egress/buffered-egress-log.js';

export * from './catalog/snapshots.js';
export * from './catalog/templates.js';
export * from './access/actor.js';
export * from './access/api-keys.js';
export * from './access/audit.js';
export * from './teams/teams.js';
export { teamUsage, withinQuota, checkForkCount, HOLDING_STATES } from './teams/quota.js';

export * from './ingress/index.js';
export * from './networks/index.js';
export * from './ssh/index.js';
export * from './idle/index.js';
export * from './usage/index.js';
export { BufferedLog, DEFAULT_LOG_BUFFER, type BufferedLogOptions, type BufferedLogStats } from './log/buffered-log.js';

export { currentCallContext, withCallContext, withCause, type CallContext } from './observe/call-context.js';
export { runOperation, runPhase, phaseTimer, observing, type OperationSpec } from './observe/operation.js';
export { EventHub } from './events/hub.js';
export { EventRecorder, type EventRecorderOptions } from './events/recorder.js';
export { EVENTS_FROM_BUS, type NewEvent } from './events/from-bus.js';
export { listEvents, followEvents, toSandboxEvent, type EventFilter, type EventSubscription } from './events/list.js';
export { eventId } from './events/cursor.js';
export { EventPruner, pruneEvents } from './events/retention.js';
export { getTimeline, toCommandLogEntry } from './events/timeline.js';
export { BufferedCommandLog, watchCommand, COMMAND_LOG_MAX_CMD, type CommandWatch } from './sandbox/command-log.js';
export { createWebhook, listWebhooks, getWebhook, deleteWebhook, listDeliveries, toWebhookInfo, toDeliveryInfo, WEBHOOK_SECRET_PREFIX, DELIVERIES_DEFAULT_LIMIT } from './webhooks/webhooks.js';
export { WebhookDispatcher, DEFAULT_WEBHOOK_TUNABLES, type WebhookTunables, type WebhookDispatcherOptions } from './webhooks/dispatcher.js';
export { signWebhookBody, verifyWebhookBody } from './webhooks/signing.js';
export { WebhookDestinationRefused, destinationRefusal, nonPublicRange, literalAddress, redactWebhookUrl, WEBHOOK_ALLOW_PRIVATE_FLAG } from './webhooks/destination.js';
