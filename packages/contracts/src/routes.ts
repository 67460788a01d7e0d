/**
 * The REST route table of `/v1`. {@link ROUTES} below is the table as data (method, path, operation id,
 * audit action, who may call, where it runs, transport): the daemon registers its routes and streams from
 * it, the SDK builds its paths from it ({@link routePath}), a forwarding layer finds a request's route and
 * sandbox with {@link matchRoute}, and a test checks it against the OpenAPI document both ways. The prose
 * table here says what each takes and answers. Bodies and responses are the schemas in `api.ts` (`teams.ts`, `ssh.ts`). All routes but
 * `GET /v1/health` need `Authorization: Bearer rmf_...`; the key belongs to a team and sees only that
 * team's sandboxes, snapshots, templates and SSH keys (another team's id is 404 as an unknown one; lists
 * hold the team's own; docs/design/TEAMS.md). Errors are `ErrorBody` with the status of their code; a
 * create, fork or resume over the team's quota is 429 QUOTA_EXCEEDED; a fork or resume in a fork tree over
 * its budget (`CreateSandboxRequest.budget`, docs/design/USAGE.md) is 429 BUDGET_EXCEEDED.
 *
 * | method | path | body / query | response |
 * |---|---|---|---|
 * | GET | /v1/health | | `{ ok: true, version, runtimes: string[] }` (no auth) |
 * | GET | /v1/openapi.json | | OpenAPI 3 document (no auth) |
 * | POST | /v1/sandboxes | CreateSandboxRequest | 201 SandboxInfo (state `running`) |
 * | GET | /v1/sandboxes | ListSandboxesQuery | ListSandboxesResponse |
 * | GET | /v1/sandboxes/:id | | SandboxInfo |
 * | DELETE | /v1/sandboxes/:id | | 204 (kill; idempotent on killed) |
 * | POST | /v1/sandboxes/:id/pause | | SandboxInfo (state `paused`); 409 CHECKPOINT_BLOCKED keeps it running |
 * | POST | /v1/sandboxes/:id/resume | `{ timeoutMs? }` | SandboxInfo (state `running`) |
 * | POST | /v1/sandboxes/:id/fork | ForkRequest | 201 ForkResponse |
 * | POST | /v1/sandboxes/:id/snapshots | SnapshotRequest | 201 SnapshotInfo |
 * | POST | /v1/sandboxes/:id/timeout | SetTimeoutRequest | SandboxInfo |
 * | GET  | /v1/sandboxes/:id/egress | | EgressPolicyInfo |
 * | PUT  | /v1/sandboxes/:id/egress | SetEgressRequest | EgressPolicyInfo (atomic replace, live on running and paused sandboxes) |
 * | GET  | /v1/sandboxes/:id/networks | | SandboxNetworksResponse (the private networks it is on) |
 * | POST | /v1/sandboxes/:id/networks | NetworkJoinRequest (`{ network, alias? }`) | 201 SandboxNetworkInfo (live; reachable within a second); 404 NETWORK_NOT_FOUND, 409 NETWORK_ALIAS_TAKEN |
 * | DELETE | /v1/sandboxes/:id/networks/:network | | 204 (leave the network, live: open connections to its members are cut; idempotent) |
 * | GET  | /v1/sandboxes/:id/ports | | PortsInfo (exposed ports with URLs, autoResume) |
 * | PUT  | /v1/sandboxes/:id/ports/:port | ExposePortRequest (`{ access? }`) | PortInfo (expose, or change its access) |
 * | DELETE | /v1/sandboxes/:id/ports/:port | | 204 (unexpose; idempotent) |
 * | GET  | /v1/sandboxes/:id/ports/:port/url | | PortUrlInfo (`{ url, host, token? }`); 404 PORT_NOT_EXPOSED |
 * | PUT  | /v1/sandboxes/:id/auto-resume | SetAutoResumeRequest | PortsInfo |
 * | PUT  | /v1/sandboxes/:id/auto-pause | SetAutoPauseRequest (`{ autoPause: { idleMs } \| null }`) | SandboxInfo |
 * | GET  | /v1/sandboxes/:id/ingress/log | IngressLogQuery (`?limit=N`) | IngressLogResponse (newest first, `wakeups`) |
 * | GET  | /v1/sandboxes/:id/egress/log | EgressLogQuery (`?limit=N`) | EgressLogResponse (newest first) |
 * | POST | /v1/sandboxes/:id/commands | CommandRequest | CommandResult (foreground; each stream's head, at most the daemon's `maxOutputBytes`, default 32 MiB: `truncated`, `capture`) or `{ pid }` (background) |
 * | GET  | /v1/sandboxes/:id/processes | | `{ processes: ProcessInfo[] }` |
 * | POST | /v1/sandboxes/:id/processes/:pid/stdin | raw bytes (application/octet-stream) | 204; 409 PROCESS_EXITED (details `exitCode`, `signal`) once the process exited |
 * | POST | /v1/sandboxes/:id/processes/:pid/stdin/close | | 204 |
 * | POST | /v1/sandboxes/:id/processes/:pid/signal | SignalRequest | 204 |
 * | GET  | /v1/sandboxes/:id/processes/:pid/wait | | `{ exitCode, signal, error }` (long poll until exit) |
 * | WS   | /v1/sandboxes/:id/commands/stream | first text frame `{type:'start', request}` | `{type:'started', pid, maxOutputBytes}` first, every output byte, exit; see StreamControl |
 * | WS   | /v1/sandboxes/:id/processes/:pid/stream?stdout=N&stderr=N | | replay from offsets, then live; `{type:'resize', cols, rows}` for a PTY |
 * | POST | /v1/sandboxes/:id/pty | PtyRequest | 201 PtyInfo (a terminal; attach with the process stream) |
 * | WS   | /v1/sandboxes/:id/pty/stream | first text frame `{type:'startPty', request: PtyRequest}` | `{type:'started', pid}` first, output (channel 1), exit; input on channel 0, `{type:'resize', cols, rows}` |
 * | POST | /v1/sandboxes/:id/processes/:pid/resize | ResizeRequest | 204; 400 PTY_SIZE_INVALID, 404 PROCESS_NOT_FOUND, 409 NOT_A_PTY or PROCESS_EXITED |
 * | GET  | /v1/sandboxes/:id/files?path=P | | raw bytes, streamed |
 * | PUT  | /v1/sandboxes/:id/files?path=P | raw bytes, streamed | FileInfo |
 * | GET  | /v1/sandboxes/:id/files/list?path=P&depth=N | | `{ entries: FileInfo[] }` |
 * | GET  | /v1/sandboxes/:id/files/stat?path=P | | FileInfo |
 * | POST | /v1/sandboxes/:id/files/mkdir | MkdirRequest | FileInfo |
 * | POST | /v1/sandboxes/:id/files/remove | RemoveRequest | 204 |
 * | POST | /v1/sandboxes/:id/files/rename | RenameRequest | FileInfo |
 * | WS   | /v1/sandboxes/:id/files/watch?path=P&recursive=B | | WatchControl: `{type:'watching', watchId, from}` first, `events`, `end`; `{type:'stop'}` from the client; 404 FILE_NOT_FOUND, 400 NOT_A_DIRECTORY, 409 WATCH_UNAVAILABLE |
 * | WS   | /v1/sandboxes/:id/files/watch/:watchId?from=N | | re-attach: replay from sequence number N (an `overflow` marker where events are missing), then live |
 * | DELETE | /v1/sandboxes/:id/files/watch/:watchId | | 204; 404 WATCH_NOT_FOUND |
 * | POST | /v1/networks | CreateNetworkRequest (`{ name }`, a DNS label) | 201 NetworkInfo; 409 NETWORK_EXISTS |
 * | GET  | /v1/networks | | ListNetworksResponse |
 * | GET  | /v1/networks/:network | (name or id) | NetworkInfo (with its members); 404 NETWORK_NOT_FOUND |
 * | DELETE | /v1/networks/:network | (name or id) | 204; 409 NETWORK_IN_USE naming its sandboxes (`details.sandboxes`) |
 * | GET  | /v1/snapshots | | `{ snapshots: SnapshotInfo[] }` |
 * | GET  | /v1/snapshots/:id | | SnapshotInfo |
 * | DELETE | /v1/snapshots/:id | | 204 (409 while a sandbox still needs it) |
 * | GET  | /v1/templates | | `{ templates: TemplateInfo[] }` |
 * | POST | /v1/templates?runtime=gvisor,microvm | TemplateSpec (+ `files[].content` inlined by the client); `runtime` (optional) picks the runtimes to build images for (default every runtime the daemon has) | NDJSON stream of TemplateBuildEvent |
 * | DELETE | /v1/templates/:id | (id or name) | 204 (409 while a live sandbox or another template needs it) |
 * | GET  | /v1/audit?limit=N&sandboxId=ID | | `{ entries: AuditEntry[] }` |
 * | POST | /v1/ssh-keys | AddSshKeyRequest | 201 SshKeyInfo; 400 SSH_KEY_INVALID, 409 SSH_KEY_EXISTS |
 * | GET  | /v1/ssh-keys | | ListSshKeysResponse |
 * | DELETE | /v1/ssh-keys/:keyId | | 204; 404 SSH_KEY_NOT_FOUND |
 * | POST | /v1/sandboxes/:id/ssh-access | SshAccessRequest (`{ ttlMs? }`) | 201 SshAccessInfo (`{ host, port, user, token, command, expiresAt }`); 503 SSH_UNAVAILABLE |
 * | POST | /v1/teams | CreateTeamRequest (`{ id, quota? }`) | 201 TeamInfo; 403 FORBIDDEN unless an admin key of the default team, 409 CONFLICT |
 * | GET  | /v1/teams | | ListTeamsResponse (the default team's admin keys: every team; else the caller's) |
 * | GET  | /v1/teams/:team | | TeamInfo (`{ id, createdAt, quota, usage }`); 404 TEAM_NOT_FOUND |
 * | PATCH | /v1/teams/:team | UpdateTeamRequest (`{ quota: { maxRunning?, maxMemoryMB?, maxForksPerCall? } }`, null = no limit) | TeamInfo; 403 FORBIDDEN |
 * | POST | /v1/keys | CreateApiKeyRequest (`{ team?, role?, name?, ttlMs? }`) | 201 CreatedApiKey (the secret in `key`, this once); 403 FORBIDDEN for a member key, 404 TEAM_NOT_FOUND |
 * | GET  | /v1/keys?team=T | | ListApiKeysResponse (never a secret); 403 FORBIDDEN for a member key |
 * | DELETE | /v1/keys/:keyId | | 204 (revoked: 401 from its next request); 404 API_KEY_NOT_FOUND, 409 CONFLICT (the default team's last admin key) |
 * | GET  | /v1/events?sandboxId=&type=&after=&limit=&order= | ListEventsQuery (`type`: comma-separated EventTypes; `after`: an event id, the previous page's `nextCursor`) | ListEventsResponse (oldest first by default); 400 for an unknown type or a malformed cursor; 404 SANDBOX_NOT_FOUND for another team's sandbox |
 * | WS   | /v1/events/stream?sandboxId=&type=&after= | EventStreamQuery | EventStreamFrame: replayed events after `after`, `{type:'ready'}`, then each new event; the team's only |
 * | GET  | /v1/sandboxes/:id/timeline?limit=N&order=asc\|desc | TimelineQuery | TimelineResponse (lifecycle events, commands with exit code and duration, egress and ingress decisions; newest first by default) |
 * | POST | /v1/webhooks | CreateWebhookRequest (`{ url, events?, name? }`, url http(s), no userinfo) | 201 CreatedWebhook (the signing secret in `secret`, this once); 400 VALIDATION_FAILED for credentials in the URL or a literal non-public IP host (unless `--webhook-allow-private`); 403 FORBIDDEN for a member key |
 * | GET  | /v1/webhooks | | ListWebhooksResponse (never a secret); 403 for a member key |
 * | GET  | /v1/webhooks/:webhookId | | WebhookInfo; 404 WEBHOOK_NOT_FOUND (also another team's) |
 * | DELETE | /v1/webhooks/:webhookId | | 204 (its deliveries go too); 404 WEBHOOK_NOT_FOUND |
 * | GET  | /v1/webhooks/:webhookId/deliveries?limit=N | ListDeliveriesQuery | ListDeliveriesResponse (newest first; each delivery's attempts) |
 * | GET  | /metrics | | Prometheus text format 0.0.4, series `ramify_*`; an admin key of the default team (401 without a key, 403 for any other); `ramify serve --metrics-listen` serves it without auth |
 * | GET  | /v1/usage | UsageQuery (`?from&to&groupBy=sandbox\|tree\|template\|team\|day&sandboxId`; times ISO 8601 or ms) | UsageResponse (the caller's team's metered usage over whole UTC hours, live sandboxes up to now) |
 * | GET  | /v1/sandboxes/:id/metrics | MetricsQuery (`?start&end`) | SandboxMetricsResponse (`{ metrics: SandboxMetric[] }`: E2B's fields, every 5 s while running, the last hour, in memory) |
 * | GET  | /v1/sandboxes/:id/tree | | SandboxTreeResponse (the fork tree from its root: each node's state, usage, budget) |
 * | GET  | /v1/sandboxes/:id/budget | | SandboxBudgetsResponse (the budgets covering it: its own, then its ancestors', with what their trees used) |
 * | PATCH | /v1/sandboxes/:id/budget | SetBudgetRequest (`{ cpuSeconds?, sandboxSeconds?, maxSandboxes? }`, null = no limit) | BudgetInfo (a new budget counts from now; raised above what was used, the tree may resume) |
 * | DELETE | /v1/sandboxes/:id/budget | | 204 (idempotent) |
 * | POST | /mcp | MCP JSON-RPC (Streamable HTTP, stateless; `@ramify/mcp`) | 200 JSON-RPC response as application/json, 202 for notifications; GET/DELETE 405 |
 *
 * Any request may carry `MCP_TOOL_HEADER` (api.ts: `x-ramify-mcp-tool: <tool>`, set by `@ramify/mcp`): it is then
 * audited with the tool (`AuditEntry.tool`), reads included; a malformed value is 400 VALIDATION_FAILED.
 *
 * On a WebSocket, a failure before the stream starts is a text frame `{type:'error', code, message}`
 * followed by close code 1008 (client error) or 1011 (server error).
 */
export const API_PREFIX = '/v1';
/** Default port of the ingress listener (`ramify serve --ingress-listen`, loopback only by default). */
export const DEFAULT_INGRESS_PORT = 7424;
/** Default ingress domain: `*.localhost` resolves to loopback in curl and browsers, no DNS set-up needed. */
export const DEFAULT_INGRESS_DOMAIN = 'localhost';
/** Header carrying a sandbox's access token to the ingress. */
export const ACCESS_TOKEN_HEADER = 'x-ramify-access-token';
/** Query parameter carrying a sandbox's access token once; the ingress exchanges it for a cookie and redirects without it. */
export const ACCESS_TOKEN_QUERY = 'ramify_access_token';
/** Default port of `ramify serve` (loopback only unless `--host` says otherwise). */
export const DEFAULT_API_PORT = 7423;
/** Largest JSON body the API accepts, bytes; larger is 413 PAYLOAD_TOO_LARGE. File uploads are streamed and unbounded. */
export const MAX_JSON_BODY_BYTES = 1 << 20;

/** Who may call a route: no key (`public`), any key of a team (`key`; it sees its team's resources only), an admin key of the team (`admin`; a member key is 403), an admin key of the default team (`operator`). */
export type RouteAuth = 'public' | 'key' | 'admin' | 'operator';

/**
 * Where a route runs once the API and the hosts are separate processes: `sandbox-host` (it acts on the
 * runtime instance, agent, network or in-memory state of the sandbox in its path: the host holding that
 * sandbox serves it), `placed` (it starts something on a host the API chooses: a create, a template
 * build), `any` (any API process answers it from the shared store). One machine: all are served locally.
 */
export type RouteTarget = 'sandbox-host' | 'placed' | 'any';

/** How a route's request and answer travel: JSON bodies, `raw` bytes, an `ndjson` line stream, or a `websocket` upgrade. */
export type RouteTransport = 'json' | 'raw' | 'ndjson' | 'websocket';

/** One route of the table. */
export interface RouteDef {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path template, parameters as `:name` (`/v1/sandboxes/:id/pause`). */
  path: string;
  /** Audit action of a mutating route (`sandbox.pause`), as audit entries record it; absent for reads and streams. */
  action?: string;
  auth: RouteAuth;
  target: RouteTarget;
  transport: RouteTransport;
}

/**
 * Every route the daemon serves, by operation id (the OpenAPI `operationId`). A new route is one entry
 * here, its handler in the daemon (mounted by operation id), its call in the SDK, and its line in the
 * prose table above.
 */
export const ROUTES = {
  getHealth: { method: 'GET', path: '/v1/health', auth: 'public', target: 'any', transport: 'json' },
  getOpenApi: { method: 'GET', path: '/v1/openapi.json', auth: 'public', target: 'any', transport: 'json' },
  getMetrics: { method: 'GET', path: '/metrics', auth: 'operator', target: 'any', transport: 'raw' },
  mcp: { method: 'POST', path: '/mcp', auth: 'key', target: 'any', transport: 'json' },

  createSandbox: { method: 'POST', path: '/v1/sandboxes', action: 'sandbox.create', auth: 'key', target: 'placed', transport: 'json' },
  listSandboxes: { method: 'GET', path: '/v1/sandboxes', auth: 'key', target: 'any', transport: 'json' },
  getSandbox: { method: 'GET', path: '/v1/sandboxes/:id', auth: 'key', target: 'any', transport: 'json' },
  killSandbox: { method: 'DELETE', path: '/v1/sandboxes/:id', action: 'sandbox.kill', auth: 'key', target: 'sandbox-host', transport: 'json' },
  pauseSandbox: { method: 'POST', path: '/v1/sandboxes/:id/pause', action: 'sandbox.pause', auth: 'key', target: 'sandbox-host', transport: 'json' },
  resumeSandbox: { method: 'POST', path: '/v1/sandboxes/:id/resume', action: 'sandbox.resume', auth: 'key', target: 'sandbox-host', transport: 'json' },
  forkSandbox: { method: 'POST', path: '/v1/sandboxes/:id/fork', action: 'sandbox.fork', auth: 'key', target: 'sandbox-host', transport: 'json' },
  snapshotSandbox: { method: 'POST', path: '/v1/sandboxes/:id/snapshots', action: 'sandbox.snapshot', auth: 'key', target: 'sandbox-host', transport: 'json' },
  setSandboxTimeout: { method: 'POST', path: '/v1/sandboxes/:id/timeout', action: 'sandbox.timeout', auth: 'key', target: 'sandbox-host', transport: 'json' },

  getPorts: { method: 'GET', path: '/v1/sandboxes/:id/ports', auth: 'key', target: 'any', transport: 'json' },
  exposePort: { method: 'PUT', path: '/v1/sandboxes/:id/ports/:port', action: 'sandbox.expose', auth: 'key', target: 'sandbox-host', transport: 'json' },
  unexposePort: { method: 'DELETE', path: '/v1/sandboxes/:id/ports/:port', action: 'sandbox.unexpose', auth: 'key', target: 'sandbox-host', transport: 'json' },
  getPortUrl: { method: 'GET', path: '/v1/sandboxes/:id/ports/:port/url', auth: 'key', target: 'any', transport: 'json' },
  setAutoResume: { method: 'PUT', path: '/v1/sandboxes/:id/auto-resume', action: 'sandbox.auto-resume', auth: 'key', target: 'sandbox-host', transport: 'json' },
  setAutoPause: { method: 'PUT', path: '/v1/sandboxes/:id/auto-pause', action: 'sandbox.auto-pause', auth: 'key', target: 'sandbox-host', transport: 'json' },
  getIngressLog: { method: 'GET', path: '/v1/sandboxes/:id/ingress/log', auth: 'key', target: 'any', transport: 'json' },
  getEgress: { method: 'GET', path: '/v1/sandboxes/:id/egress', auth: 'key', target: 'any', transport: 'json' },
  setEgress: { method: 'PUT', path: '/v1/sandboxes/:id/egress', action: 'sandbox.egress', auth: 'key', target: 'sandbox-host', transport: 'json' },
  getEgressLog: { method: 'GET', path: '/v1/sandboxes/:id/egress/log', auth: 'key', target: 'any', transport: 'json' },

  runCommand: { method: 'POST', path: '/v1/sandboxes/:id/commands', action: 'command.run', auth: 'key', target: 'sandbox-host', transport: 'json' },
  streamCommand: { method: 'GET', path: '/v1/sandboxes/:id/commands/stream', action: 'command.stream', auth: 'key', target: 'sandbox-host', transport: 'websocket' },
  createPty: { method: 'POST', path: '/v1/sandboxes/:id/pty', action: 'pty.create', auth: 'key', target: 'sandbox-host', transport: 'json' },
  streamPty: { method: 'GET', path: '/v1/sandboxes/:id/pty/stream', action: 'pty.stream', auth: 'key', target: 'sandbox-host', transport: 'websocket' },
  listProcesses: { method: 'GET', path: '/v1/sandboxes/:id/processes', auth: 'key', target: 'sandbox-host', transport: 'json' },
  resizeProcess: { method: 'POST', path: '/v1/sandboxes/:id/processes/:pid/resize', action: 'process.resize', auth: 'key', target: 'sandbox-host', transport: 'json' },
  writeStdin: { method: 'POST', path: '/v1/sandboxes/:id/processes/:pid/stdin', action: 'process.stdin', auth: 'key', target: 'sandbox-host', transport: 'raw' },
  closeStdin: { method: 'POST', path: '/v1/sandboxes/:id/processes/:pid/stdin/close', action: 'process.stdin.close', auth: 'key', target: 'sandbox-host', transport: 'json' },
  signalProcess: { method: 'POST', path: '/v1/sandboxes/:id/processes/:pid/signal', action: 'process.signal', auth: 'key', target: 'sandbox-host', transport: 'json' },
  waitProcess: { method: 'GET', path: '/v1/sandboxes/:id/processes/:pid/wait', auth: 'key', target: 'sandbox-host', transport: 'json' },
  streamProcess: { method: 'GET', path: '/v1/sandboxes/:id/processes/:pid/stream', auth: 'key', target: 'sandbox-host', transport: 'websocket' },

  readFile: { method: 'GET', path: '/v1/sandboxes/:id/files', auth: 'key', target: 'sandbox-host', transport: 'raw' },
  writeFile: { method: 'PUT', path: '/v1/sandboxes/:id/files', action: 'file.write', auth: 'key', target: 'sandbox-host', transport: 'raw' },
  listFiles: { method: 'GET', path: '/v1/sandboxes/:id/files/list', auth: 'key', target: 'sandbox-host', transport: 'json' },
  statFile: { method: 'GET', path: '/v1/sandboxes/:id/files/stat', auth: 'key', target: 'sandbox-host', transport: 'json' },
  makeDir: { method: 'POST', path: '/v1/sandboxes/:id/files/mkdir', action: 'file.mkdir', auth: 'key', target: 'sandbox-host', transport: 'json' },
  removeFile: { method: 'POST', path: '/v1/sandboxes/:id/files/remove', action: 'file.remove', auth: 'key', target: 'sandbox-host', transport: 'json' },
  renameFile: { method: 'POST', path: '/v1/sandboxes/:id/files/rename', action: 'file.rename', auth: 'key', target: 'sandbox-host', transport: 'json' },
  watchDir: { method: 'GET', path: '/v1/sandboxes/:id/files/watch', action: 'files.watch', auth: 'key', target: 'sandbox-host', transport: 'websocket' },
  rewatchDir: { method: 'GET', path: '/v1/sandboxes/:id/files/watch/:watchId', action: 'files.watch', auth: 'key', target: 'sandbox-host', transport: 'websocket' },
  stopWatch: { method: 'DELETE', path: '/v1/sandboxes/:id/files/watch/:watchId', action: 'files.unwatch', auth: 'key', target: 'sandbox-host', transport: 'json' },

  listSnapshots: { method: 'GET', path: '/v1/snapshots', auth: 'key', target: 'any', transport: 'json' },
  getSnapshot: { method: 'GET', path: '/v1/snapshots/:id', auth: 'key', target: 'any', transport: 'json' },
  deleteSnapshot: { method: 'DELETE', path: '/v1/snapshots/:id', action: 'snapshot.delete', auth: 'key', target: 'any', transport: 'json' },
  listTemplates: { method: 'GET', path: '/v1/templates', auth: 'key', target: 'any', transport: 'json' },
  buildTemplate: { method: 'POST', path: '/v1/templates', action: 'template.build', auth: 'key', target: 'placed', transport: 'ndjson' },
  deleteTemplate: { method: 'DELETE', path: '/v1/templates/:id', action: 'template.delete', auth: 'key', target: 'any', transport: 'json' },
  listAudit: { method: 'GET', path: '/v1/audit', auth: 'key', target: 'any', transport: 'json' },

  addSshKey: { method: 'POST', path: '/v1/ssh-keys', action: 'ssh-key.add', auth: 'key', target: 'any', transport: 'json' },
  listSshKeys: { method: 'GET', path: '/v1/ssh-keys', auth: 'key', target: 'any', transport: 'json' },
  removeSshKey: { method: 'DELETE', path: '/v1/ssh-keys/:keyId', action: 'ssh-key.remove', auth: 'key', target: 'any', transport: 'json' },
  createSshAccess: { method: 'POST', path: '/v1/sandboxes/:id/ssh-access', action: 'sandbox.ssh-access', auth: 'key', target: 'sandbox-host', transport: 'json' },

  createTeam: { method: 'POST', path: '/v1/teams', action: 'team.create', auth: 'operator', target: 'any', transport: 'json' },
  listTeams: { method: 'GET', path: '/v1/teams', auth: 'key', target: 'any', transport: 'json' },
  getTeam: { method: 'GET', path: '/v1/teams/:team', auth: 'key', target: 'any', transport: 'json' },
  setTeamQuota: { method: 'PATCH', path: '/v1/teams/:team', action: 'team.quota', auth: 'operator', target: 'any', transport: 'json' },
  createApiKey: { method: 'POST', path: '/v1/keys', action: 'key.create', auth: 'admin', target: 'any', transport: 'json' },
  listApiKeys: { method: 'GET', path: '/v1/keys', auth: 'admin', target: 'any', transport: 'json' },
  revokeApiKey: { method: 'DELETE', path: '/v1/keys/:keyId', action: 'key.revoke', auth: 'admin', target: 'any', transport: 'json' },

  createNetwork: { method: 'POST', path: '/v1/networks', action: 'network.create', auth: 'key', target: 'any', transport: 'json' },
  listNetworks: { method: 'GET', path: '/v1/networks', auth: 'key', target: 'any', transport: 'json' },
  getNetwork: { method: 'GET', path: '/v1/networks/:network', auth: 'key', target: 'any', transport: 'json' },
  deleteNetwork: { method: 'DELETE', path: '/v1/networks/:network', action: 'network.delete', auth: 'key', target: 'any', transport: 'json' },
  listSandboxNetworks: { method: 'GET', path: '/v1/sandboxes/:id/networks', auth: 'key', target: 'any', transport: 'json' },
  joinNetwork: { method: 'POST', path: '/v1/sandboxes/:id/networks', action: 'sandbox.network-attach', auth: 'key', target: 'sandbox-host', transport: 'json' },
  leaveNetwork: { method: 'DELETE', path: '/v1/sandboxes/:id/networks/:network', action: 'sandbox.network-detach', auth: 'key', target: 'sandbox-host', transport: 'json' },

  listEvents: { method: 'GET', path: '/v1/events', auth: 'key', target: 'any', transport: 'json' },
  streamEvents: { method: 'GET', path: '/v1/events/stream', auth: 'key', target: 'any', transport: 'websocket' },
  getTimeline: { method: 'GET', path: '/v1/sandboxes/:id/timeline', auth: 'key', target: 'any', transport: 'json' },
  createWebhook: { method: 'POST', path: '/v1/webhooks', action: 'webhook.create', auth: 'admin', target: 'any', transport: 'json' },
  listWebhooks: { method: 'GET', path: '/v1/webhooks', auth: 'admin', target: 'any', transport: 'json' },
  getWebhook: { method: 'GET', path: '/v1/webhooks/:webhookId', auth: 'admin', target: 'any', transport: 'json' },
  deleteWebhook: { method: 'DELETE', path: '/v1/webhooks/:webhookId', action: 'webhook.delete', auth: 'admin', target: 'any', transport: 'json' },
  listDeliveries: { method: 'GET', path: '/v1/webhooks/:webhookId/deliveries', auth: 'admin', target: 'any', transport: 'json' },

  getUsage: { method: 'GET', path: '/v1/usage', auth: 'key', target: 'any', transport: 'json' },
  getSandboxMetrics: { method: 'GET', path: '/v1/sandboxes/:id/metrics', auth: 'key', target: 'sandbox-host', transport: 'json' },
  getSandboxTree: { method: 'GET', path: '/v1/sandboxes/:id/tree', auth: 'key', target: 'any', transport: 'json' },
  getBudgets: { method: 'GET', path: '/v1/sandboxes/:id/budget', auth: 'key', target: 'any', transport: 'json' },
  setBudget: { method: 'PATCH', path: '/v1/sandboxes/:id/budget', action: 'sandbox.budget', auth: 'key', target: 'any', transport: 'json' },
  removeBudget: { method: 'DELETE', path: '/v1/sandboxes/:id/budget', action: 'sandbox.budget.remove', auth: 'key', target: 'any', transport: 'json' },
} as const satisfies Record<string, RouteDef>;

/** An operation id of {@link ROUTES}. */
export type OperationId = keyof typeof ROUTES;
