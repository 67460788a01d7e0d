/**
 * The REST API contract (`/v1`), as zod schemas shared by the daemon (validation, OpenAPI) and the
 * SDK (types). Request schemas are strict: unknown fields are a 400 `VALIDATION_FAILED`.
 * Units: durations in milliseconds (`...Ms`), sizes in bytes unless the name says MB.
 */
import { z } from 'zod';
import { MAX_FORK_COUNT } from './constants.js';
import { EgressPeer, MAX_NETWORKS_PER_SANDBOX, NetworkJoinRequest, SnapshotNetworks } from './networks.js';
import { Budget } from './usage.js';
import { mustBe } from './issue-messages.js';

/** Lifecycle states; the legal transitions live in `@ramify/core` (one table, nothing else compares). */
export const SandboxState = z.enum(['creating', 'running', 'pausing', 'paused', 'resuming', 'killing', 'killed', 'error']);
export type SandboxState = z.infer<typeof SandboxState>;

/**
 * Isolation runtimes: `gvisor` (runsc: a user-space kernel per sandbox) and `microvm` (QEMU: a virtual
 * machine with its own Debian guest kernel; KVM where it works, TCG emulation otherwise).
 */
export const RuntimeName = z.enum(['gvisor', 'microvm']);
export type RuntimeName = z.infer<typeof RuntimeName>;

export const TimeoutAction = z.enum(['pause', 'kill']);
export type TimeoutAction = z.infer<typeof TimeoutAction>;

/** Longest sandbox lifetime one call may ask for: 24 h. */
export const MAX_SANDBOX_TIMEOUT_MS = 24 * 3600_000;

const StringMap = z.record(z.string().min(1).max(256), z.string().max(8192));
const EnvMap = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are [A-Za-z_][A-Za-z0-9_]*'), z.string().max(65536));

/** Most rules one egress policy may hold. */
export const MAX_EGRESS_RULES = 1000;
/** Longest egress rule, characters (before normalisation). */
export const MAX_EGRESS_RULE_LENGTH = 300;

/**
 * An ordered list of egress allow rules, one string each: `host`, `*.host` (subdomains), `host:port`,
 * `ip`, `ip:port`, `cidr`, `cidr:port` (IPv4 only) or `*` (everything); a port is `N` or `N-M` in 1-65535.
 * No rules = open egress; the first rule switches the sandbox to default-deny. A host has at least two
 * labels (`pypi.org`): a single label such as `none` or `localhost` is refused with a hint (it is no host
 * a sandbox can reach, and usually meant "deny everything": mode `deny-all`). Rules are checked and
 * normalised by the daemon (lowercase, no trailing dot, IDN as punycode); a bad rule is a 400
 * `VALIDATION_FAILED` whose message and `details` (`rule`, `index`, 0-based) name it, and whose
 * `details.issues` give its field (`body.rules.2`; in a create `body.egress.rules.2` or `body.egress.2`).
 * At most {@link MAX_EGRESS_RULES} rules of {@link MAX_EGRESS_RULE_LENGTH} characters.
 */
export const EgressRules = z.array(z.string());

/**
 * `open`: everything allowed but what is always closed (metadata/link-local, the host, other sandboxes,
 * and private ranges no rule names); `allowlist`: only what a rule allows; `deny-all`: nothing leaves
 * (no name resolves, no address is reachable).
 */
export const EgressMode = z.enum(['open', 'allowlist', 'deny-all']);
export type EgressMode = z.infer<typeof EgressMode>;

/**
 * An egress policy as a request gives it (`PUT /v1/sandboxes/{id}/egress`, and `egress` of a create):
 * `{ rules }` as always (`[]` = open, any rule = allowlist), or an explicit `mode`: `{ mode: 'deny-all' }`,
 * `{ mode: 'open' }`, `{ mode: 'allowlist', rules: [...] }` (at least one rule). Rules with `open` or
 * `deny-all`, an `allowlist` without rules, or neither field: 400 `VALIDATION_FAILED` (checked by the daemon).
 */
export const EgressPolicyRequest = z
  .strictObject({
    mode: EgressMode.optional().describe("open | allowlist | deny-all; default: 'open' without rules, 'allowlist' with them"),
    rules: EgressRules.optional().describe("allow rules; only with mode 'allowlist' (or no mode)"),
  })
  .describe("An egress policy: { rules } (no rules = open, any rule = allowlist) or { mode: 'deny-all' } (nothing leaves) or { mode: 'open' }");
export type EgressPolicyRequest = z.infer<typeof EgressPolicyRequest>;

/** `PUT /v1/sandboxes/{id}/egress`: replace the whole policy at once (`{ rules: [] }` or `{ mode: 'open' }` opens egress again). */
export const SetEgressRequest = EgressPolicyRequest;
export type SetEgressRequest = z.infer<typeof SetEgressRequest>;

/** A sandbox's egress policy as in force. */
export const EgressPolicyInfo = z.object({
  /** Normalised rules, in order (empty unless `mode` is `allowlist`). */
  rules: z.array(z.string()),
  mode: EgressMode,
  /** When the policy was last set (ISO time); null when it never was (open by default). */
  updatedAt: z.string().nullable(),
});
export type EgressPolicyInfo = z.infer<typeof EgressPolicyInfo>;

/**
 * The egress policy a snapshot recorded: its sandbox's when the snapshot was taken (normalised rules).
 * A sandbox created from the snapshot starts with it unless its create request gives `egress`.
 */
export const SnapshotEgress = z.object({ mode: EgressMode, rules: z.array(z.string()) });
export type SnapshotEgress = z.infer<typeof SnapshotEgress>;

/** Most ports one sandbox may expose. */
export const MAX_EXPOSED_PORTS = 64;

/** A TCP port inside a sandbox: an integer from 1 to 65535. */
export const PortNumber = z.number({ error: 'a port is an integer from 1 to 65535' }).int('a port is an integer from 1 to 65535').min(1, 'a port is an integer from 1 to 65535').max(65535, 'a port is an integer from 1 to 65535');

/**
 * Who may reach an exposed port through its URL: `token` (default) needs the sandbox's access token (header
 * `X-Ramify-Access-Token`, query parameter `ramify_access_token`, or the cookie a query parameter is exchanged
 * for); `public` needs nothing.
 */
export const PortAccess = z.enum(['token', 'public']);
export type PortAccess = z.infer<typeof PortAccess>;

/** One exposed port of a sandbox. */
export const ExposedPort = z.object({ port: z.number().int(), access: PortAccess });
export type ExposedPort = z.infer<typeof ExposedPort>;

/** A port to expose at create: a number (token access) or `{ port, access }`. */
export const PortSpec = z.union([PortNumber, z.strictObject({ port: PortNumber, access: PortAccess.optional() })]);
export type PortSpec = z.infer<typeof PortSpec>;

/**
 * Where this daemon's port URLs point: `<protocol>://<port>-<sandboxId>.<domain>[:<port>]`. `port` is null
 * when it is the protocol's default (80, 443) and left out of hosts.
 */
export const IngressEndpoint = z.object({
  domain: z.string(),
  port: z.number().int().nullable(),
  protocol: z.enum(['http', 'https']),
});
export type IngressEndpoint = z.infer<typeof IngressEndpoint>;

/** An exposed port with its URL. */
export const PortInfo = z.object({
  port: z.number().int(),
  access: PortAccess,
  /** `<port>-<sandboxId>.<domain>[:<ingressPort>]`, as `getHost(port)` gives it. */
  host: z.string(),
  url: z.string(),
});
export type PortInfo = z.infer<typeof PortInfo>;

/** `GET /v1/sandboxes/{id}/ports`: the exposed ports and whether a request wakes the sandbox when paused. */
export const PortsInfo = z.object({
  ports: z.array(PortInfo),
  autoResume: z.boolean(),
});
export type PortsInfo = z.infer<typeof PortsInfo>;

/** `PUT /v1/sandboxes/{id}/ports/{port}`: expose the port (or change its access). Default access `token`. */
export const ExposePortRequest = z.strictObject({ access: PortAccess.optional() });
export type ExposePortRequest = z.infer<typeof ExposePortRequest>;

/** `PUT /v1/sandboxes/{id}/auto-resume`. */
export const SetAutoResumeRequest = z.strictObject({ autoResume: z.boolean() });
export type SetAutoResumeRequest = z.infer<typeof SetAutoResumeRequest>;

/** `GET /v1/sandboxes/{id}/ports/{port}/url`: the port's URL, host, and (token access only) the access token. */
export const PortUrlInfo = z.object({
  url: z.string(),
  host: z.string(),
  /** The sandbox's access token, only when the port has `token` access. Secret: whoever holds it reaches the sandbox's token ports. */
  token: z.string().optional(),
});
export type PortUrlInfo = z.infer<typeof PortUrlInfo>;

/** What a snapshot recorded of its sandbox's ingress: its exposed ports and `autoResume` (null: the default). Never the token. */
export const SnapshotIngress = z.object({ ports: z.array(ExposedPort), autoResume: z.boolean().nullable() });
export type SnapshotIngress = z.infer<typeof SnapshotIngress>;

/** Shortest and longest idle time after which a sandbox may be paused: 10 s and 24 h. */
export const MIN_AUTO_PAUSE_IDLE_MS = 10_000;
export const MAX_AUTO_PAUSE_IDLE_MS = 24 * 3600_000;

/**
 * Idle auto-pause: pause the sandbox once, for `idleMs`, no API call named it, no stream on it was open
 * (exec, attach, WebSocket), no ingress request or connection to it was open, and its CPU use stayed
 * below the daemon's threshold (`autoPauseCpuThreshold`, default 0.1 cores, read from the runtime's
 * cgroup). A blocked checkpoint (`CHECKPOINT_BLOCKED`) is retried later; it never kills. A request to an
 * exposed port wakes it again (autoResume). `null` turns it off.
 */
export const AutoPause = z.strictObject({
  idleMs: z.number().int().min(MIN_AUTO_PAUSE_IDLE_MS).max(MAX_AUTO_PAUSE_IDLE_MS).describe('pause after this long idle, ms (10000 to 86400000)'),
});
export type AutoPause = z.infer<typeof AutoPause>;

/** `PUT /v1/sandboxes/{id}/auto-pause`: `{ autoPause: { idleMs } }` or `{ autoPause: null }` (off). */
export const SetAutoPauseRequest = z.strictObject({ autoPause: AutoPause.nullable() });
export type SetAutoPauseRequest = z.infer<typeof SetAutoPauseRequest>;

export const CreateSandboxRequest = z.strictObject({
  /** Template name or id; default `base`. Mutually exclusive with `snapshot`. */
  template: z.string().min(1).max(128).optional(),
  /** Snapshot id or name to start from (memory, processes and files). */
  snapshot: z.string().min(1).max(128).optional(),
  /** Lifetime from now; at the deadline `onTimeout` happens. Default 300000 (5 min). */
  timeoutMs: z.number().int().positive().max(MAX_SANDBOX_TIMEOUT_MS).optional(),
  onTimeout: TimeoutAction.optional(),
  /**
   * The sandbox's default environment, merged over its template's `envs` (per key, these win); kept
   * across pause/resume and copied to forks. From a snapshot: merged over the envs the snapshot's sandbox
   * had when it was taken (recorded with the snapshot, never shown by the API); for a snapshot that has
   * none recorded (a template image, or taken before schema migration 8), over its template's current envs.
   */
  envs: EnvMap.optional(),
  metadata: StringMap.optional(),
  cpuCount: z.number().int().min(1).max(16).optional(),
  memoryMB: z.number().int().min(128).max(65536).optional(),
  /**
   * Root disk size, MiB (microVM sandboxes only): at least the image's disk (template images: the
   * daemon's, 2048 by default; a snapshot's: its sandbox's), at most the runtime's limit (microVM:
   * 262144). Default: the image's.
   */
  diskSizeMB: z.number().int().positive().max(1_048_576).optional(),
  runtime: RuntimeName.optional(),
  /**
   * The sandbox's egress policy: a list of allow rules (see {@link EgressRules}; empty = open) or an
   * {@link EgressPolicyRequest} such as `{ mode: 'deny-all' }`. Absent: from a template, open egress; from
   * a snapshot, the policy the snapshot recorded (see {@link SnapshotInfo}`.egress`; open when it recorded
   * none). A request's `egress` replaces the snapshot's (it is not merged). Validated like `PUT /v1/sandboxes/{id}/egress`: a bad rule fails the create with 400 naming it,
   * before anything starts. Enforced before the sandbox's image is restored.
   */
  egress: z
    .union([EgressRules, EgressPolicyRequest])
    .optional()
    .describe("allow rules, or { mode: 'deny-all' | 'open' | 'allowlist', rules? }; absent: open, or from a snapshot the snapshot's recorded policy"),
  /**
   * Ports to expose at once (each reachable at its URL, see `GET /v1/sandboxes/{id}/ports/{port}/url`): a number
   * (token access) or `{ port, access }`. Absent: none, or from a snapshot the ports it recorded. At most
   * {@link MAX_EXPOSED_PORTS}.
   */
  ports: z.array(PortSpec).max(MAX_EXPOSED_PORTS).optional().describe('ports to expose: 3000 (token access) or { port: 3000, access: "public" }'),
  /**
   * Whether a request to an exposed port of the sandbox while it is paused resumes it. Default: on while a
   * port is exposed (from a snapshot: what it recorded).
   */
  autoResume: z.boolean().optional().describe('a request to an exposed port wakes the paused sandbox; default on while a port is exposed'),
  /**
   * Idle auto-pause (see {@link AutoPause}); null: off. Absent: off, or from a snapshot what it recorded
   * (see {@link SnapshotInfo}`.autoPause`). A fork copies its parent's.
   */
  autoPause: AutoPause.nullable().optional().describe('pause once idle this long; null: off; absent: off, or from a snapshot what it recorded'),
  /**
   * Private networks to join before the sandbox runs (see `networks.ts`): each network (name or id) and
   * the sandbox's alias there. Absent: none (also from a snapshot: a snapshot records its sandbox's
   * networks but a sandbox created from it joins none unless asked). An unknown network is a 404
   * `NETWORK_NOT_FOUND`, a taken alias a 409 `NETWORK_ALIAS_TAKEN`, before anything starts.
   */
  networks: z.array(NetworkJoinRequest).max(MAX_NETWORKS_PER_SANDBOX).optional().describe('private networks to join: [{ network, alias? }]; names <alias>.<network>.internal'),
  /**
   * A budget for the sandbox and everything forked from it (see {@link Budget}): over `cpuSeconds` or
   * `sandboxSeconds` the whole tree is paused; a fork past `maxSandboxes` is refused. Absent: none.
   */
  budget: Budget.optional().describe('limits of this sandbox and its forks: { cpuSeconds?, sandboxSeconds?, maxSandboxes? }'),
});
export type CreateSandboxRequest = z.infer<typeof CreateSandboxRequest>;

export const SandboxInfo = z.object({
  id: z.string(),
  state: SandboxState,
  runtime: RuntimeName,
  templateId: z.string(),
  /** Snapshot the sandbox was started from (template snapshot, fork point or named snapshot). */
  sourceSnapshotId: z.string().nullable(),
  /** The sandbox this one was forked from, if any. */
  parentId: z.string().nullable(),
  cpuCount: z.number().int(),
  memoryMB: z.number().int(),
  /** Root disk size, MiB; null when the runtime has no disk of its own (gVisor: file changes count against memory). */
  diskSizeMB: z.number().int().nullable(),
  metadata: StringMap,
  createdAt: z.string(),
  /** When the timeout action fires (ISO time); null while paused (the clock stops). */
  endAt: z.string().nullable(),
  timeoutMs: z.number().int(),
  onTimeout: TimeoutAction,
  /** Human-readable reason when `state` is `error`. */
  error: z.string().nullable(),
  /** Exposed ports (see `PUT /v1/sandboxes/{id}/ports/{port}`), in port order. */
  ports: z.array(ExposedPort),
  /** Whether a request to an exposed port wakes the sandbox when it is paused. */
  autoResume: z.boolean(),
  /** Where this daemon's port URLs point (what `getHost(port)` needs); null when the daemon serves no ingress. */
  ingress: IngressEndpoint.nullable(),
  /** Idle auto-pause; null when off. */
  autoPause: AutoPause.nullable(),
  /** The team it belongs to (its creator's key's; a fork's is its parent's). */
  team: z.string(),
});
export type SandboxInfo = z.infer<typeof SandboxInfo>;

export const ListSandboxesQuery = z.strictObject({
  /** Comma-separated states, e.g. `running,paused`. Default: everything but `killed`. */
  state: z.string().optional(),
  /** URL-encoded `key=value&key2=value2`; all pairs must match. */
  metadata: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
  nextToken: z.string().optional(),
});
export const ListSandboxesResponse = z.object({ sandboxes: z.array(SandboxInfo), nextToken: z.string().nullable() });
export type ListSandboxesResponse = z.infer<typeof ListSandboxesResponse>;

export const ForkRequest = z.strictObject({
  count: z.number().int().min(1).max(MAX_FORK_COUNT),
  /**
   * Whether each child joins its parent's private networks, under an alias derived from the parent's
   * (`<parent alias>-<n>`, the lowest free n), so siblings and the parent find each other. Default true.
   */
  networks: z.boolean().optional().describe("children join the parent's networks as <parent alias>-<n> (default true); false: on no network"),
});
export const ForkResponse = z.object({ sandboxes: z.array(SandboxInfo) });
export type ForkResponse = z.infer<typeof ForkResponse>;

export const SetTimeoutRequest = z.strictObject({ timeoutMs: z.number().int().positive().max(MAX_SANDBOX_TIMEOUT_MS) });

export const SnapshotRequest = z.strictObject({ name: z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9._-]{0,127}$/, mustBe('a snapshot name: 1-128 of [a-zA-Z0-9._-], starting with a letter or digit')) });
export const SnapshotInfo = z.object({
  id: z.string(),
  name: z.string().nullable(),
  /** `template` (a template's idle image), `pause`, `fork` or `named`. */
  kind: z.enum(['template', 'pause', 'fork', 'named']),
  runtime: RuntimeName,
  templateId: z.string(),
  sandboxId: z.string().nullable(),
  parentSnapshotId: z.string().nullable(),
  sizeBytes: z.number().int(),
  createdAt: z.string(),
  /**
   * The egress policy recorded with the snapshot (its sandbox's when it was taken), which a sandbox
   * created from it starts with unless the request gives `egress`. Null when none is recorded: a template
   * image (its sandboxes start open), or a snapshot taken before policies were recorded (schema migration
   * 10) whose sandbox no longer exists to take it from; a sandbox created from such a snapshot starts
   * open, as it always did.
   */
  egress: SnapshotEgress.nullable().describe('egress policy a sandbox created from this snapshot starts with; null: none recorded (template image, or an old snapshot): open'),
  /** The exposed ports and autoResume a sandbox created from it starts with (unless the request gives `ports`); null: none recorded. */
  ingress: SnapshotIngress.nullable(),
  /** The idle auto-pause a sandbox created from it starts with (unless the request gives `autoPause`); null: off, or none recorded. */
  autoPause: AutoPause.nullable().describe("idle auto-pause a sandbox created from this snapshot starts with (unless the create gives autoPause); null: off or none recorded"),
  /** The team it belongs to (its sandbox's; a template image: its template's). */
  team: z.string(),
  /** The private networks its sandbox was on when it was taken; recorded only (a sandbox created from it joins none). Null: none recorded. */
  networks: SnapshotNetworks.nullable().describe('private networks its sandbox was on (recorded only: a sandbox created from the snapshot joins none); null: none recorded'),
});
export type SnapshotInfo = z.infer<typeof SnapshotInfo>;

/** One verdict of the egress enforcement (a connection or a DNS name). */
export const EgressLogEntry = z.object({
  at: z.string(),
  /** `tcp`, `udp`, `icmp`, or `dns` for a name the policy resolver answered, refused, or could not resolve. */
  protocol: z.enum(['tcp', 'udp', 'icmp', 'dns']),
  /** Destination IPv4 address (for `dns`: the address answered, or empty when refused or failed). */
  destination: z.string(),
  /** Destination port; null when the protocol has none. */
  port: z.number().int().nullable(),
  /** DNS name, TLS SNI or HTTP Host involved, when known. */
  name: z.string().nullable(),
  verdict: z.enum(['allowed', 'denied']),
  /** The normalised rule that allowed it; null when denied (or allowed because egress is open). */
  rule: z.string().nullable(),
  /**
   * For a connection to another sandbox: that sandbox and the private network that allowed it (`network`
   * null when refused: they share none). Absent from every other entry.
   */
  peer: EgressPeer.nullable().optional(),
  /**
   * A DNS lookup the policy allowed that got no address (`dns`, verdict `allowed`, empty destination): the
   * answer's code. `NXDOMAIN`: no such name; `SERVFAIL`: no answer could be had (the upstream resolvers
   * unreachable, slow or failing, or the daemon's resolver overloaded). Absent from every other entry.
   */
  error: z.enum(['NXDOMAIN', 'SERVFAIL']).nullable().optional(),
});
export type EgressLogEntry = z.infer<typeof EgressLogEntry>;

/** One request (or WebSocket) the ingress served for a sandbox's port, or answered itself (401, 404, 502, ...). */
export const IngressLogEntry = z.object({
  /** When the request arrived (ISO time). */
  at: z.string(),
  /** The client's address as the ingress saw it. */
  client: z.string(),
  method: z.string(),
  /** Path and query, the access token parameter removed. */
  path: z.string(),
  port: z.number().int(),
  /** Status answered (101 for a WebSocket that was opened); 0 when the connection broke before any. */
  status: z.number().int(),
  /** Response body bytes sent to the client (for a WebSocket: bytes sent to the client until it closed). */
  bytes: z.number().int(),
  /** From arrival to the last byte sent (a WebSocket: until it closed), ms. */
  durationMs: z.number(),
  /** Whether this request woke the sandbox (it was paused and autoResume resumed it). */
  woke: z.boolean(),
});
export type IngressLogEntry = z.infer<typeof IngressLogEntry>;

export const IngressLogQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(1000).optional() });
/** `GET /v1/sandboxes/{id}/ingress/log`: newest first, and how often a request woke the sandbox. */
export const IngressLogResponse = z.object({
  entries: z.array(IngressLogEntry),
  /** Resumes started by ingress requests (concurrent requests sharing one resume count once). */
  wakeups: z.number().int(),
  /** When a request last woke it (ISO time); null if never. */
  lastWakeAt: z.string().nullable(),
});
export type IngressLogResponse = z.infer<typeof IngressLogResponse>;

export const EgressLogQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(1000).optional() });
export const EgressLogResponse = z.object({ entries: z.array(EgressLogEntry) });
export type EgressLogResponse = z.infer<typeof EgressLogResponse>;

export const CommandRequest = z.strictObject({
  /** Run by `/bin/bash -c`. */
  cmd: z.string().min(1).max(1 << 20),
  cwd: z.string().max(4096).optional(),
  envs: EnvMap.optional(),
  /** Kill the whole process tree at this deadline; 0 = no deadline. Default 60000 for foreground runs. */
  timeoutMs: z.number().int().min(0).max(MAX_SANDBOX_TIMEOUT_MS).optional(),
  /** Keep stdin open for `sendStdin`; default false (stdin is /dev/null-like, closed at once). */
  stdin: z.boolean().optional(),
  /** Return at once with the pid instead of waiting for exit. */
  background: z.boolean().optional(),
  user: z.string().max(64).optional(),
});
export type CommandRequest = z.infer<typeof CommandRequest>;

/** How much of one stream a command result holds (see `output-capture.ts`). */
export const CapturedStream = z.object({
  /** Bytes of the stream's start the result's text holds: all of them unless cut; at most `limitBytes`. */
  keptBytes: z.number().int().describe('bytes of the stream (from its first byte) the result holds; at most limitBytes, up to 3 fewer when the cut fell inside a UTF-8 character (it is left out whole)'),
  /** Bytes the process wrote to the stream, kept or not. */
  totalBytes: z.number().int().describe('bytes the process wrote to the stream, kept or not'),
});
export type CapturedStream = z.infer<typeof CapturedStream>;

/** The capture limit of a command result and what it kept of each stream. */
export const CommandCapture = z.object({
  /** Per-stream limit, bytes: the daemon's `maxOutputBytes` (`ramify serve --max-output-bytes`, default 32 MiB). */
  limitBytes: z.number().int().describe("per-stream limit, bytes: the daemon's maxOutputBytes (ramify serve --max-output-bytes; default 33554432, 32 MiB)"),
  stdout: CapturedStream,
  stderr: CapturedStream,
});
export type CommandCapture = z.infer<typeof CommandCapture>;

export const CommandResult = z.object({
  pid: z.number().int(),
  exitCode: z.number().int().nullable(),
  /** Set when the process died of a signal, e.g. `SIGKILL`. */
  signal: z.string().nullable(),
  /** The head of stdout, decoded as UTF-8: at most `capture.limitBytes` bytes of it (see `truncated`). */
  stdout: z.string().describe('stdout decoded as UTF-8: at most capture.limitBytes bytes of it, from the start'),
  stderr: z.string().describe('stderr decoded as UTF-8: at most capture.limitBytes bytes of it, from the start'),
  /**
   * `timeout` when the deadline killed it; `oom` when it, or one of its processes, was killed because the
   * sandbox ran out of memory (the sandbox keeps running). Null when it ended on its own.
   */
  error: z.string().nullable(),
  /**
   * True when stdout or stderr wrote more than `capture.limitBytes` bytes: the result holds the head of
   * it and the rest was dropped (stream the command to get every byte). The exit code is the process's.
   */
  truncated: z.boolean().describe('true when stdout or stderr was cut at capture.limitBytes: the result holds the head, the rest was dropped (stream the command over /commands/stream to get every byte)'),
  capture: CommandCapture,
});
export type CommandResult = z.infer<typeof CommandResult>;

export const ProcessInfo = z.object({
  pid: z.number().int(),
  cmd: z.string(),
  cwd: z.string(),
  startedAt: z.string(),
  running: z.boolean(),
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  /** As {@link CommandResult}'s: `timeout`, `oom`, or null (also while it runs). */
  error: z.string().nullable(),
  /** Bytes produced so far on each stream (offsets for re-attach). */
  stdoutBytes: z.number().int(),
  stderrBytes: z.number().int(),
  /** The terminal's size, for a process started on one (a PTY); absent for pipes. */
  pty: z.object({ cols: z.number().int(), rows: z.number().int() }).optional(),
});
export type ProcessInfo = z.infer<typeof ProcessInfo>;

/**
 * A terminal: a process started on a pseudo-terminal of `cols` x `rows` (default 80x24; each 1..1000,
 * else 400 PTY_SIZE_INVALID). `cmd` defaults to a login shell, `/bin/bash -i -l`. Its environment has
 * `TERM=xterm-256color` and `LANG=C.UTF-8` unless `envs` (or the sandbox's) say otherwise. No deadline
 * unless `timeoutMs`. All its output is stdout; input goes to its stdin (the terminal).
 */
export const PtyRequest = z.strictObject({
  cols: z.number().int().optional(),
  rows: z.number().int().optional(),
  cmd: z.string().min(1).max(1 << 20).optional(),
  cwd: z.string().max(4096).optional(),
  envs: EnvMap.optional(),
  timeoutMs: z.number().int().min(0).max(MAX_SANDBOX_TIMEOUT_MS).optional(),
  user: z.string().max(64).optional(),
});
export type PtyRequest = z.infer<typeof PtyRequest>;

/** A terminal's new size (each 1..1000, else 400 PTY_SIZE_INVALID). */
export const ResizeRequest = z.strictObject({ cols: z.number().int(), rows: z.number().int() });
export type ResizeRequest = z.infer<typeof ResizeRequest>;

/** A started terminal: its pid (attach with the process stream) and size. */
export const PtyInfo = z.object({ pid: z.number().int(), cols: z.number().int(), rows: z.number().int() });
export type PtyInfo = z.infer<typeof PtyInfo>;

export const SignalRequest = z.strictObject({ signal: z.enum(['SIGTERM', 'SIGKILL', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2', 'SIGSTOP', 'SIGCONT']) });

export const FileType = z.enum(['file', 'dir', 'symlink', 'other']);
export const FileInfo = z.object({
  name: z.string(),
  path: z.string(),
  type: FileType,
  size: z.number().int(),
  mode: z.number().int(),
  mtimeMs: z.number(),
});
export type FileInfo = z.infer<typeof FileInfo>;

export const PathQuery = z.strictObject({ path: z.string().min(1).max(4096) });
export const ListFilesQuery = z.strictObject({ path: z.string().min(1).max(4096), depth: z.coerce.number().int().min(1).max(16).optional() });
export const MkdirRequest = z.strictObject({ path: z.string().min(1).max(4096) });
export const RemoveRequest = z.strictObject({ path: z.string().min(1).max(4096) });
export const RenameRequest = z.strictObject({ from: z.string().min(1).max(4096), to: z.string().min(1).max(4096) });

/** A template's booted-and-idle image for one runtime. */
export const TemplateImage = z.object({
  runtime: RuntimeName,
  /** The `template` snapshot sandboxes of this runtime are restored from. */
  snapshotId: z.string(),
});
export type TemplateImage = z.infer<typeof TemplateImage>;

/**
 * The daemon's warm pool as `GET /v1/health` shows it (docs/design/POOL.md): restored idle sandboxes
 * creates claim. No template names: health is unauthenticated.
 */
export const WarmPoolHealth = z.object({
  mode: z.enum(['off', 'auto', 'sizes']),
  /** Most memoryMB its idle sandboxes may add up to, MiB. */
  budgetMB: z.number().int(),
  /** Creates served from the pool since the daemon started. */
  hits: z.number().int(),
  /** Creates from a template that restored instead: none idle (`empty`), or other resources than the pooled ones (`resources`). */
  misses: z.object({ empty: z.number().int(), resources: z.number().int() }),
  idle: z.number().int(),
  filling: z.number().int(),
  /** Sum of the idle sandboxes' memoryMB (their limit, not their use: bench/lifecycle prints their PSS). */
  memoryMB: z.number().int(),
  /** Per runtime: sandboxes the pool aims to keep, and those idle now. */
  runtimes: z.record(z.string(), z.object({ target: z.number().int(), idle: z.number().int() })),
});
export type WarmPoolHealth = z.infer<typeof WarmPoolHealth>;

export const TemplateInfo = z.object({
  id: z.string(),
  name: z.string(),
  /** Runtime of the default image (the first of `images`). */
  runtime: RuntimeName,
  /** Content hash of the spec chain; equal hash = cache hit. */
  specHash: z.string(),
  /** Snapshot id of the default image. */
  snapshotId: z.string(),
  /** One image per runtime the template was built for (one spec, one root filesystem, an image each). */
  images: z.array(TemplateImage),
  parent: z.string().nullable(),
  /**
   * Default environment of every sandbox made from the template: the spec's `envs` merged over its
   * parent's. A create request's `envs` override it per key.
   */
  envs: EnvMap,
  sizeBytes: z.number().int(),
  createdAt: z.string(),
  /** The team that built it; the `default` team's templates are shared: every team lists and uses them. */
  team: z.string(),
});
export type TemplateInfo = z.infer<typeof TemplateInfo>;

/**
 * Query of `POST /v1/templates`: which runtimes to build images for, comma-separated
 * (`gvisor,microvm`); default every runtime this daemon has.
 */
export const TemplateBuildQuery = z.strictObject({
  runtime: z
    .string()
    .transform((v) => v.split(',').map((s) => s.trim()).filter((s) => s.length > 0))
    .pipe(z.array(RuntimeName).min(1))
    .optional(),
});
export type TemplateBuildQuery = z.infer<typeof TemplateBuildQuery>;

/** `ramify template build` spec (YAML or JSON file). */
export const TemplateSpec = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, mustBe('a template name: 1-64 of [a-z0-9._-], starting with a letter or digit')),
  /** Parent template name; omit for a root built from Debian bookworm. */
  from: z.string().optional(),
  /** Extra Debian packages. */
  packages: z.array(z.string().regex(/^[a-z0-9][a-z0-9+.-]*$/, mustBe('a Debian package name: [a-z0-9][a-z0-9+.-]*'))).max(500).optional(),
  /**
   * Files to place: `{ path, content }` (text) or `{ path, source }` (host file, relative to the spec;
   * the spec loader inlines it as `content`, base64 with `encoding: 'base64'` when it is not UTF-8 text).
   */
  files: z.array(z.strictObject({
    path: z.string().startsWith('/'),
    content: z.string().optional(),
    /** How `content` is encoded; default `utf8`. */
    encoding: z.enum(['utf8', 'base64']).optional(),
    source: z.string().optional(),
    mode: z.number().int().optional(),
  })).optional(),
  /** Shell commands run inside a sandbox of the template, in order, after files are placed. */
  run: z.array(z.string()).optional(),
  /**
   * Environment variables (merged over the parent's): set for `run` at build time and the default
   * environment of every sandbox made from the template (a create request's `envs` override it per key).
   */
  envs: EnvMap.optional(),
});
export type TemplateSpec = z.infer<typeof TemplateSpec>;

/** One line of the NDJSON progress stream of `POST /v1/templates`. */
export const TemplateBuildEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('step'), step: z.string(), index: z.number().int(), total: z.number().int(), cached: z.boolean() }),
  z.object({ type: z.literal('log'), line: z.string() }),
  z.object({ type: z.literal('done'), template: TemplateInfo, elapsedMs: z.number() }),
  z.object({ type: z.literal('error'), code: z.string(), message: z.string() }),
]);
export type TemplateBuildEvent = z.infer<typeof TemplateBuildEvent>;

/**
 * One audit log entry: a mutating API call (method, path, HTTP status), any API call an MCP tool made
 * (`tool` set; a read's action is `read`), or something a running sandbox reported (method `EVENT`,
 * status 0; today action `sandbox.oom`, error code `COMMAND_OOM`: a process killed because the sandbox
 * ran out of memory, `path` naming it).
 */
export const AuditEntry = z.object({
  /**
   * The entry's number in its team's log: 1, 2, 3, ... per team (the calls that carried no valid key are
   * numbered on their own), so ids never reveal how many calls other teams made. The paging cursor
   * (`GET /v1/audit?before=`). Numbers given before migration 35 were global; entries were renumbered then.
   */
  id: z.number().int().describe("the entry's number in its team's audit log (1, 2, 3, ... per team): the paging cursor `before`"),
  at: z.string(),
  apiKeyId: z.string().nullable(),
  /** The caller's team; null when the call carried no valid key. */
  team: z.string().nullable(),
  method: z.string(),
  path: z.string(),
  action: z.string(),
  sandboxId: z.string().nullable(),
  status: z.number().int(),
  errorCode: z.string().nullable(),
  /** The MCP tool whose call made this API call (its {@link MCP_TOOL_HEADER} header), e.g. `command_run`; null otherwise. */
  tool: z.string().nullable(),
});
export type AuditEntry = z.infer<typeof AuditEntry>;

/**
 * Header naming the MCP tool an API call is made for (`@ramify/mcp` sets it on every call of a tool):
 * such a call is audited even when it is a read, with the tool in `AuditEntry.tool`. Its value matches
 * {@link MCP_TOOL_NAME}; anything else is a 400 `VALIDATION_FAILED`.
 */
export const MCP_TOOL_HEADER = 'x-ramify-mcp-tool';
/** An MCP tool name as the audit log takes it: lower-case letters, digits and `_`, at most 64. */
export const MCP_TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;

export type StreamControl =
  | { type: 'start'; request: CommandRequest }
  /** First frame of a terminal stream (`/v1/sandboxes/{id}/pty/stream`). */
  | { type: 'startPty'; request: PtyRequest }
  /** Resize the stream's terminal (terminal and process streams of a PTY); a bad size answers `error`. */
  | { type: 'resize'; cols: number; rows: number }
  /**
   * Always the first frame of a stream (daemons before it may send output first). `maxOutputBytes`: the
   * daemon's per-stream limit of command results, bytes, which the SDK applies to the results it
   * collects (the stream itself is never cut); absent from daemons before it.
   */
  | { type: 'started'; pid: number; maxOutputBytes?: number }
  | { type: 'closeStdin' }
  | { type: 'exit'; exitCode: number | null; signal: string | null; error: string | null }
  | { type: 'error'; code: string; message: string };
