/**
 * Ramify's typed errors. Every error that crosses a package boundary is a `RamifyError` with a stable,
 * machine-readable `code`; the daemon maps `code` to an HTTP status with {@link httpStatusFor}, and the
 * SDK rebuilds the same class from `{ error: { code, message } }` bodies.
 */
import { quote } from './quote.js';

/** Stable error codes. Adding one is fine; renaming one breaks clients. */
export const ERROR_CODES = {
  BAD_REQUEST: 400,
  VALIDATION_FAILED: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  /** No such route (the path or method is not part of the API). */
  ROUTE_NOT_FOUND: 404,
  /** The path is a route's, but not for this method (details: `method`, `allowed`; an `Allow` header too). */
  METHOD_NOT_ALLOWED: 405,
  SANDBOX_NOT_FOUND: 404,
  TEMPLATE_NOT_FOUND: 404,
  SNAPSHOT_NOT_FOUND: 404,
  PROCESS_NOT_FOUND: 404,
  FILE_NOT_FOUND: 404,
  CWD_NOT_FOUND: 400,
  NOT_A_DIRECTORY: 400,
  IS_A_DIRECTORY: 400,
  FILE_EXISTS: 409,
  INVALID_STATE: 409,
  /** The sandbox failed (state `error`: its runtime instance exited, ran out of memory or could not be restored); details.reason says why. */
  SANDBOX_FAILED: 409,
  CHECKPOINT_BLOCKED: 409,
  /**
   * The process has exited, so the call cannot reach it (stdin to a process that is gone); details:
   * `pid`, `exitCode` and `signal` (null when unknown).
   */
  PROCESS_EXITED: 409,
  CONFLICT: 409,
  /** A terminal size outside 1..1000 columns or rows (details: `cols`, `rows`, `max`). */
  PTY_SIZE_INVALID: 400,
  /** The process was started without a terminal, so it cannot be resized (details: `pid`). */
  NOT_A_PTY: 409,
  /** No watch with that id in the sandbox (stopped, expired, or never started there); details: `watchId`. */
  WATCH_NOT_FOUND: 404,
  /**
   * The sandbox cannot watch files: its template predates watching (no `inotifywait` from Debian's
   * `inotify-tools`: rebuild the template), or the kernel refused (inotify limits); the message says which.
   */
  WATCH_UNAVAILABLE: 409,
  PAYLOAD_TOO_LARGE: 413,
  /**
   * No room for the data: a microVM's root disk is full, a gVisor sandbox's memory (where its file
   * changes live) has no room left for files, or the host's disk has no room for a checkpoint image (the
   * pause, fork or snapshot is refused and the sandbox keeps running).
   */
  NO_SPACE: 507,
  COMMAND_TIMEOUT: 408,
  RUNTIME_UNAVAILABLE: 503,
  RUNTIME_ERROR: 500,
  /**
   * Remote snapshot storage (an S3-compatible bucket) cannot be used: unreachable, credentials rejected,
   * bucket missing, or access denied; the message names what failed and how to fix it. Nothing local is lost.
   */
  STORAGE_UNAVAILABLE: 503,
  /**
   * The database of shared state (Postgres) cannot be used: unreachable, credentials refused, database
   * missing; the message names the server (never the password), what failed and how to fix it.
   */
  DATABASE_UNAVAILABLE: 503,
  /** The image was made by a runtime release this host's cannot restore (e.g. another runsc release); details name both. */
  IMAGE_INCOMPATIBLE: 409,
  /**
   * `ramify serve`: another daemon holds this data directory's lock (details: `dataDir`, `pid` of the holder,
   * null when unknown). One daemon per data directory: stop it, or give this one its own `--data-dir`.
   */
  DATA_DIR_IN_USE: 409,
  /**
   * `ramify serve`: an address one of its listeners needs (the API's `--port`, `--ingress-listen`,
   * `--ssh-listen`, `--metrics-listen`) is taken by another process; checked before anything is set up, so
   * nothing is left behind. details: `listener` (`api`, `ingress`, `ssh` or `metrics`), `address`, `heldBy`
   * (the process holding it, when `ss -ltnp` names it). Stop that process, or give the flag another address.
   */
  ADDRESS_IN_USE: 409,
  /**
   * `ramify serve` (and `--reset-network`): another daemon on this host uses the same `--network-prefix`
   * (its namespaces, nftables tables and slots are named after it). details: `prefix`, `pid` and `dataDir`
   * of the holder (null when unknown). Give this daemon its own `--network-prefix`, or stop that one.
   */
  NETWORK_PREFIX_IN_USE: 409,
  AGENT_UNREACHABLE: 502,
  INTERNAL: 500,
  /** A template build step failed (mmdebstrap, a setup `run` command, the checkpoint); details name the step. */
  TEMPLATE_BUILD_FAILED: 422,
  /** The template exists but has no image for the runtime asked for (build it with that runtime). */
  TEMPLATE_NOT_BUILT: 409,
  // Client-side codes: raised by the SDK/CLI, never sent by the daemon (the status is nominal).
  /** The API could not be reached (connection refused, DNS, TLS, socket reset). */
  API_UNREACHABLE: 503,
  /** The client gave up waiting for the API (`requestTimeoutMs`). */
  REQUEST_TIMEOUT: 408,
  /** A command finished unsuccessfully (non-zero exit or killed by a signal); carries the result. */
  COMMAND_EXIT: 422,
  /** A command, or one of its processes, was killed because the sandbox ran out of memory; carries the result. */
  COMMAND_OOM: 422,
  /** `Sandbox.explore()`: every strategy threw or failed to score. */
  EXPLORE_FAILED: 422,
  /** A file read as text is not valid UTF-8 (read it as bytes instead); nothing was replaced with U+FFFD. */
  NOT_UTF8: 422,
  // Ingress (port URLs, see docs/design/INGRESS.md): what the daemon's ingress listener answers.
  /** The port is not exposed (`ramify sandbox expose ID PORT`); inbound stays closed until it is. */
  PORT_NOT_EXPOSED: 404,
  /** The sandbox was killed: its URLs are gone for good. */
  SANDBOX_KILLED: 410,
  /** The Host header is not `<port>-<sandboxId>.<domain>` of this daemon's ingress domain. */
  INGRESS_HOST_INVALID: 400,
  /** The port has token access and the request carried no token (header, query parameter or cookie). */
  ACCESS_TOKEN_REQUIRED: 401,
  /** A token was given in the header or query parameter but is not of the token format (`rit_` + 43 characters). */
  ACCESS_TOKEN_MALFORMED: 400,
  /** A well-formed token that is not this sandbox's. */
  ACCESS_TOKEN_INVALID: 403,
  /** The sandbox is paused and its `autoResume` is off: resume it first. */
  SANDBOX_PAUSED: 503,
  /** The sandbox is waking (auto-resume) and did not answer within the daemon's bound; retry after `Retry-After`. */
  SANDBOX_WAKING: 503,
  /** Nothing in the sandbox accepts connections on the port. */
  UPSTREAM_NOT_LISTENING: 502,
  /** A server in the sandbox listens on the port, but only on a loopback address (127.0.0.1 / ::1): it must bind 0.0.0.0. */
  UPSTREAM_LOOPBACK_ONLY: 502,
  /** The connection to the sandbox's server failed or broke (reset, timeout). */
  UPSTREAM_ERROR: 502,
  // SSH gateway (see docs/design/SSH.md).
  /** Not one OpenSSH public key line of a supported type (`ssh-ed25519 AAAA...`): a private key, garbage, several lines. */
  SSH_KEY_INVALID: 400,
  SSH_KEY_NOT_FOUND: 404,
  /** This public key is registered already (details: `id`, `fingerprint`). */
  SSH_KEY_EXISTS: 409,
  /** The daemon serves no SSH gateway (`ramify serve --ssh-listen off`), so no SSH access can be given. */
  SSH_UNAVAILABLE: 503,
  // Teams and API keys (see docs/design/TEAMS.md).
  /** No team of that id that this key may see (another team's is 404 too: no existence leak). */
  TEAM_NOT_FOUND: 404,
  /** No API key of that id in the caller's reach. */
  API_KEY_NOT_FOUND: 404,
  /**
   * The team's quota does not allow this call; nothing was created or started. details: `team`, `limit`
   * (`maxRunning`, `maxMemoryMB` or `maxForksPerCall`), `max`, `current` (in use now) and `requested`.
   */
  QUOTA_EXCEEDED: 429,
  // Private networks (see docs/design/NETWORKS.md).
  NETWORK_NOT_FOUND: 404,
  /** A network with this name exists already (details: `name`, `id`). */
  NETWORK_EXISTS: 409,
  /** The network still has sandboxes on it (details: `sandboxes`, their ids): detach or kill them first. */
  NETWORK_IN_USE: 409,
  /** Another sandbox on the network has this alias (details: `network`, `alias`, `sandboxId`). */
  NETWORK_ALIAS_TAKEN: 409,
  // Events and webhooks (see docs/design/EVENTS.md).
  /** No webhook of that id in the caller's team (another team's is 404 too). */
  WEBHOOK_NOT_FOUND: 404,
  /**
   * `after=` of an event listing or stream is not an event id this key's team was given: malformed, of
   * another team's stream, past the team's newest event, or from before per-team ids (details: `cursor`).
   */
  INVALID_CURSOR: 400,
  // Budgets (see docs/design/USAGE.md).
  /**
   * The fork tree is over its budget (its sandboxes were paused), or this fork would take it over
   * `maxSandboxes`; nothing was forked or resumed. details: `sandboxId` (the budget's root), `limit`
   * (`cpuSeconds`, `sandboxSeconds` or `maxSandboxes`), `max`, `used`. Raise the budget to go on.
   */
  BUDGET_EXCEEDED: 429,
  /**
   * A host daemon's clock is too far off the database's to take a lease (details: `hostId`, `skewMs`,
   * `maxSkewMs`): synchronise it (chrony, systemd-timesyncd) and start it again.
   */
  HOST_CLOCK_SKEW: 409,
  /** No host of that id in the registry. */
  HOST_NOT_FOUND: 404,
  /**
   * The host holding the sandbox stopped heartbeating and was written off (its running sandboxes are
   * `error`); a host whose lease expired must register again before it takes work.
   */
  HOST_LOST: 409,
  /** No active host has room for the sandbox (memory, CPUs or network slots); details: `hosts`, `memoryMB`, `cpus`. Retry later or add a host. */
  NO_HOST_CAPACITY: 503,
  /**
   * The paused sandbox's image lives only on a host that is gone (its upload to remote storage had not
   * finished): it can be resumed once that host returns. details: `hostId`.
   */
  SANDBOX_UNAVAILABLE: 503,
  /** A forwarded create or resume carried no placement reservation of this host (a client cannot pick a host). */
  PLACEMENT_INVALID: 409,
} as const satisfies Record<string, number>;

/** One of {@link ERROR_CODES}' keys. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** The JSON body of every non-2xx API response. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; details?: Record<string, unknown> };
}

/** Root of every error Ramify throws on purpose. `code` is stable; `message` is for humans. */
export class RamifyError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;
  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'RamifyError';
    this.code = code;
    this.details = details;
  }
  /** The HTTP status this error maps to. */
  get status(): number {
    return httpStatusFor(this.code);
  }
  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) } };
  }
  /** What `JSON.stringify` writes (a JSON log line): name, code, message and details (an Error's message is not enumerable). */
  toJSON(): { name: string; code: ErrorCode; message: string; details?: Record<string, unknown> } {
    return { name: this.name, code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) };
  }
}

/** HTTP status for a code; unknown codes map to 500. */
export function httpStatusFor(code: string): number {
  return (ERROR_CODES as Record<string, number>)[code] ?? 500;
}

/** True when `value` looks like a Ramify error (works across package copies, unlike `instanceof`). */
export function isRamifyError(value: unknown): value is RamifyError {
  return value instanceof Error && typeof (value as { code?: unknown }).code === 'string' && ((value as unknown as { code: string }).code in ERROR_CODES);
}

/** The codes of the not-found errors. */
export type NotFoundCode = Extract<ErrorCode, `${string}_NOT_FOUND`>;

/**
 * The not-found error of every store and use-case: `<what> '<name>' not found<more>`, the name quoted and
 * cut as every received value is (quote.ts: `snapshot '<first 40 characters>...' not found`), so a long
 * id a client made up does not come back whole in the message. `what` names the kind (`sandbox`, `SSH
 * key`); `more` follows the words (` (it was killed)`); `details` default `{ id: name }` (the name whole).
 */
export function notFound(code: NotFoundCode, what: string, name: string, details: Record<string, unknown> = { id: name }, more = ''): RamifyError {
  return new RamifyError(code, `${what} ${quote(name)} not found${more}`, details);
}
