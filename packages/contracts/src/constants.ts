/**
 * The contracts' plain values that need no schema: limits, names and patterns. They live here, apart
 * from the zod schemas that use them, so that `@ramify/contracts/client` (client.ts) can export them
 * without building a schema; `@ramify/contracts` exports them too.
 */

/** Upper bound of `fork({ count })`. */
export const MAX_FORK_COUNT = 64;

/**
 * WebSocket stream framing (`/v1/sandboxes/{id}/commands/stream`, `/v1/sandboxes/{id}/pty/stream`,
 * `/v1/sandboxes/{id}/processes/{pid}/stream`).
 * Binary frames carry bytes: first byte is the channel ({@link StreamChannel}), the rest is payload.
 * Text frames carry JSON control messages (`StreamControl` in api.ts).
 */
export const StreamChannel = { stdin: 0, stdout: 1, stderr: 2 } as const;

/**
 * A DNS label (RFC 1123), lower case: 1-63 of `a-z`, `0-9` and `-`, neither starting nor ending with `-`.
 * Network names and aliases are both labels of `<alias>.<network>.internal`.
 */
export const DNS_LABEL_PATTERN = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** What a network name or alias must look like, for error messages. */
export const DNS_LABEL_RULE = "a DNS label: 1-63 of a-z, 0-9 and '-', starting and ending with a letter or digit (lower case)";

/**
 * Every event type, E2B's names where E2B has one (`sandbox.lifecycle.*`). `budget.exceeded` is a fork
 * tree's budget running out (metering and budgets: the sandboxes it stops follow as `paused` or `killed`
 * events with cause `budget`).
 */
export const EVENT_TYPES = [
  'sandbox.lifecycle.created',
  'sandbox.lifecycle.paused',
  'sandbox.lifecycle.resumed',
  'sandbox.lifecycle.forked',
  'sandbox.lifecycle.snapshotted',
  'sandbox.lifecycle.timed_out',
  'sandbox.lifecycle.killed',
  'sandbox.lifecycle.error',
  'sandbox.oom',
  'budget.exceeded',
] as const;

/** Shortest, default and longest lifetime of an SSH access token: 1 minute, 1 hour, 24 hours. */
export const MIN_SSH_TOKEN_TTL_MS = 60_000;
export const DEFAULT_SSH_TOKEN_TTL_MS = 3_600_000;
export const MAX_SSH_TOKEN_TTL_MS = 24 * 3_600_000;

/** Largest quota figure accepted (any limit above it is as good as none). */
export const MAX_QUOTA_VALUE = 1_000_000_000;

/** Shortest and longest lifetime of an API key: 1 minute, 10 years. */
export const MIN_API_KEY_TTL_MS = 60_000;
export const MAX_API_KEY_TTL_MS = 10 * 365 * 86_400_000;

/** Largest budget figure accepted (any limit above it is as good as none). */
export const MAX_BUDGET_VALUE = 1_000_000_000;
