/**
 * `@ramify/sdk`: the TypeScript client of a Ramify daemon, shaped like E2B's JS SDK.
 *
 * ```ts
 * const sbx = await Sandbox.create({ template: 'base', timeoutMs: 600_000 })
 * await sbx.files.write('/work/app.py', src)
 * const r = await sbx.commands.run('python3 app.py', { onStdout: (d) => process.stdout.write(d) })
 * const forks = await sbx.fork({ count: 3 })
 * ```
 */
export { Sandbox, type SandboxOpts, type SandboxListOpts } from './sandbox.js';
export { SandboxPaginator, type SandboxListFilter } from './paginator.js';
export { Commands, type CommandStartOpts, type CommandConnectOpts, type StdinData } from './commands/commands.js';
export { CommandHandle, MAX_STREAM_RECONNECTS } from './commands/handle.js';
export { Pty, PtyHandle, type PtyCreateOpts, type PtyConnectOpts, type PtySize } from './commands/pty.js';
export type { OutputCallbacks } from './commands/output.js';
export type { ProcessSignal } from './commands/process-routes.js';
export { Files, type WriteData, type ReadFormat, type ReadOpts } from './files.js';
export { syncDir, SYNC_DEBOUNCE_MS, DEFAULT_IGNORES, IGNORE_FILE, statePath, type SyncOpts, type SyncSession, type SyncChange, type SyncProgress } from './sync/index.js';
export { WatchHandle, type WatchOpts, type WatchOverflow, type FilesystemEvent, type FilesystemEventType, type WatchGapReason } from './watch.js';
export {
  explore, pickWinner, ExploreFailedError,
  type Strategy, type ExploreOpts, type ExploreReport, type ExploreStoppedReport, type ExploreEntry, type ExploreWinner, type ExploreFailure,
  type ForkTreeNode, type ForkOutcome, type StrategyStatus,
} from './explore.js';
export {
  getHealth, listSnapshots, getSnapshot, deleteSnapshot, listTemplates, buildTemplate, deleteTemplate, listAudit, type ListAuditOpts, type BuildTemplateOpts,
} from './admin.js';
export { addSshKey, listSshKeys, removeSshKey } from './ssh-keys.js';
export { createTeam, listTeams, getTeam, setTeamQuota, createApiKey, listApiKeys, revokeApiKey, type CreateApiKeyOpts } from './teams.js';
export { Network, SandboxNetworks } from './networks.js';
export { Events, type EventFilterOpts, type ListEventsOpts, type StreamEventsOpts, type EventStreamHandle } from './events.js';
export { Webhook, verifyWebhookSignature, type VerifyWebhookOpts } from './webhooks.js';
export { getUsage, type UsageOpts, type SandboxMetrics, type TimeArg } from './usage.js';
export {
  resolveConnection, ConnectionConfig, DEFAULT_REQUEST_TIMEOUT_MS, SYSTEM_API_KEY_FILE,
  type ConnectionOpts, type ConnectionSettings, type ConnectionEnvironment,
} from './connection.js';
export {
  RamifyError, isRamifyError, NotFoundError, SandboxNotFoundError, AuthenticationError, PermissionDeniedError, InvalidStateError, TimeoutError,
  SandboxFailedError, ConnectionError, NotUtf8Error, QuotaExceededError, BudgetExceededError, CommandExitError, errorFromCode, type ErrorCode, type ErrorBody,
} from './errors.js';
export type * from './types.js';
/** Default per-stream limit of a command result, bytes (a daemon may set its own: `CommandResult.capture.limitBytes`). */
export { DEFAULT_MAX_OUTPUT_BYTES } from '@ramify/contracts/client';
