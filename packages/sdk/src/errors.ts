/**
 * The SDK's errors. Every error the SDK throws on purpose is a {@link RamifyError} (the class from
 * `@ramify/contracts`) with a stable `code`; the subclasses below exist so callers can `instanceof`
 * the common cases. API error bodies `{ error: { code, message } }` are turned back into the matching
 * class by {@link errorFromBody}.
 */
import { RamifyError } from '@ramify/contracts/client';
import type { ErrorBody, ErrorCode } from '@ramify/contracts';
import type { CommandResult } from './types.js';

export { RamifyError, isRamifyError, type ErrorCode, type ErrorBody } from '@ramify/contracts/client';

/** A sandbox, template, snapshot, process or file does not exist (`*_NOT_FOUND`). */
export class NotFoundError extends RamifyError {
  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(code, message, details);
    this.name = 'NotFoundError';
  }
}

/** The sandbox does not exist (`SANDBOX_NOT_FOUND`). */
export class SandboxNotFoundError extends NotFoundError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('SANDBOX_NOT_FOUND', message, details);
    this.name = 'SandboxNotFoundError';
  }
}

/** The API key is missing or wrong (`UNAUTHORIZED`), or not allowed to do this (`FORBIDDEN`: {@link PermissionDeniedError}). */
export class AuthenticationError extends RamifyError {
  constructor(code: 'UNAUTHORIZED' | 'FORBIDDEN', message: string, details?: Record<string, unknown>) {
    super(code, message, details);
    this.name = 'AuthenticationError';
  }
}

/**
 * The key is valid but not allowed to do this (`FORBIDDEN`: a member key on an admin call, a team's key on
 * the operator's calls). A subclass of {@link AuthenticationError}, which caught both before (as the
 * OpenAI SDK splits `AuthenticationError` and `PermissionDeniedError`).
 */
export class PermissionDeniedError extends AuthenticationError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('FORBIDDEN', message, details);
    this.name = 'PermissionDeniedError';
  }
}

/**
 * The sandbox or process is in a state that does not allow the call (`INVALID_STATE`,
 * `CHECKPOINT_BLOCKED`; `PROCESS_EXITED` for stdin to a process that has exited, with `details.exitCode`
 * and `details.signal`).
 */
export class InvalidStateError extends RamifyError {
  constructor(code: 'INVALID_STATE' | 'CHECKPOINT_BLOCKED' | 'PROCESS_EXITED', message: string, details?: Record<string, unknown>) {
    super(code, message, details);
    this.name = 'InvalidStateError';
  }
}

/**
 * The sandbox failed (`SANDBOX_FAILED`, state `error`): its runtime instance exited, ran out of memory or
 * could not be restored. `details.reason` (and the message) say why; the only call left is `kill`.
 */
export class SandboxFailedError extends RamifyError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('SANDBOX_FAILED', message, details);
    this.name = 'SandboxFailedError';
  }
}

/** The client gave up waiting (`REQUEST_TIMEOUT`) or the server reported a deadline (`COMMAND_TIMEOUT`). */
export class TimeoutError extends RamifyError {
  constructor(code: 'REQUEST_TIMEOUT' | 'COMMAND_TIMEOUT', message: string, details?: Record<string, unknown>) {
    super(code, message, details);
    this.name = 'TimeoutError';
  }
}

/** The API could not be reached at all (`API_UNREACHABLE`); the message names the API URL. */
export class ConnectionError extends RamifyError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('API_UNREACHABLE', message, details);
    this.name = 'ConnectionError';
  }
}

/**
 * A file read as text (`files.read(path)`, `format: 'text'`) is not valid UTF-8 (`NOT_UTF8`): the SDK
 * never swaps bytes for U+FFFD. `details.path` names the file; read it with `format: 'bytes'`.
 */
export class NotUtf8Error extends RamifyError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('NOT_UTF8', message, details);
    this.name = 'NotUtf8Error';
  }
}

/**
 * A command finished unsuccessfully: non-zero exit code, killed by a signal, killed at its deadline, or
 * killed because the sandbox ran out of memory. `code` is `COMMAND_TIMEOUT` when the deadline killed it
 * (`result.error === 'timeout'`), `COMMAND_OOM` when it or one of its processes was killed for running out
 * of memory (`result.error === 'oom'`; the sandbox keeps running), otherwise `COMMAND_EXIT`. The full
 * {@link CommandResult} (with all output) is on `result` and mirrored on the error for E2B-style access
 * (`err.exitCode`, `err.stderr`, `err.error`).
 */
export class CommandExitError extends RamifyError {
  readonly result: CommandResult;
  constructor(result: CommandResult) {
    const timedOut = result.error === 'timeout';
    const oom = result.error === 'oom';
    const ended = result.signal ? `was killed by ${result.signal}` : `exited with code ${result.exitCode}`;
    const how = timedOut
      ? 'was killed at its deadline'
      : oom
        ? `${result.signal ? 'was killed' : `exited with code ${result.exitCode} after one of its processes was killed`}: the sandbox ran out of memory`
        : ended;
    super(timedOut ? 'COMMAND_TIMEOUT' : oom ? 'COMMAND_OOM' : 'COMMAND_EXIT', `command (pid ${result.pid}) ${how}`, {
      pid: result.pid,
      exitCode: result.exitCode,
      signal: result.signal,
    });
    this.name = 'CommandExitError';
    this.result = result;
  }
  get exitCode(): number | null { return this.result.exitCode; }
  get signal(): string | null { return this.result.signal; }
  get stdout(): string { return this.result.stdout; }
  get stderr(): string { return this.result.stderr; }
  get error(): string | null { return this.result.error; }
}

/**
 * The team's quota does not allow the call (`QUOTA_EXCEEDED`, 429); nothing was created or started.
 * `details`: `team`, `limit` (`maxRunning`, `maxMemoryMB`, `maxForksPerCall`), `max`, `current`, `requested`.
 */
export class QuotaExceededError extends RamifyError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('QUOTA_EXCEEDED', message, details);
    this.name = 'QuotaExceededError';
  }
}

/**
 * The fork tree is over its budget, or a fork would take it over `maxSandboxes` (`BUDGET_EXCEEDED`, 429);
 * nothing was forked or resumed. `details`: `sandboxId` (the budget's root), `limit`, `max`, `used`.
 * Raise it with `sbx.setBudget(...)`.
 */
export class BudgetExceededError extends RamifyError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('BUDGET_EXCEEDED', message, details);
    this.name = 'BudgetExceededError';
  }
}

/** Build the most specific error class for `code`. Unknown codes (a newer daemon) stay plain `RamifyError`s. */
export function errorFromCode(code: string, message: string, details?: Record<string, unknown>): RamifyError {
  const c = code as ErrorCode;
  switch (c) {
    case 'SANDBOX_NOT_FOUND': return new SandboxNotFoundError(message, details);
    case 'TEMPLATE_NOT_FOUND': case 'SNAPSHOT_NOT_FOUND': case 'PROCESS_NOT_FOUND': case 'FILE_NOT_FOUND': case 'WATCH_NOT_FOUND': case 'TEAM_NOT_FOUND': case 'API_KEY_NOT_FOUND':
      return new NotFoundError(c, message, details);
    case 'UNAUTHORIZED': return new AuthenticationError(c, message, details);
    case 'FORBIDDEN': return new PermissionDeniedError(message, details);
    case 'INVALID_STATE': case 'CHECKPOINT_BLOCKED': case 'PROCESS_EXITED': return new InvalidStateError(c, message, details);
    case 'SANDBOX_FAILED': return new SandboxFailedError(message, details);
    case 'REQUEST_TIMEOUT': case 'COMMAND_TIMEOUT': return new TimeoutError(c, message, details);
    case 'API_UNREACHABLE': return new ConnectionError(message, details);
    case 'NOT_UTF8': return new NotUtf8Error(message, details);
    case 'QUOTA_EXCEEDED': return new QuotaExceededError(message, details);
    case 'BUDGET_EXCEEDED': return new BudgetExceededError(message, details);
    default: return new RamifyError(c, message, details);
  }
}

/** True when `value` has the shape of an {@link ErrorBody}. */
export function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null) return false;
  const e = (value as { error?: unknown }).error;
  return typeof e === 'object' && e !== null && typeof (e as { code?: unknown }).code === 'string'
    && typeof (e as { message?: unknown }).message === 'string';
}

/**
 * Turn an API error response into an error. `text` is the raw body; a body that is not an
 * {@link ErrorBody} becomes a `RamifyError` whose code is derived from the HTTP status.
 */
export function errorFromResponse(status: number, text: string, what: string): RamifyError {
  let parsed: unknown;
  try { parsed = JSON.parse(text); } catch { parsed = undefined; }
  if (isErrorBody(parsed)) return errorFromCode(parsed.error.code, parsed.error.message, parsed.error.details);
  const snippet = text.trim().slice(0, 200);
  const code: ErrorCode = status === 401 ? 'UNAUTHORIZED' : status === 403 ? 'FORBIDDEN' : status === 413 ? 'PAYLOAD_TOO_LARGE'
    : status === 409 ? 'CONFLICT' : status >= 400 && status < 500 ? 'BAD_REQUEST' : 'INTERNAL';
  return errorFromCode(code, `${what} failed with HTTP ${status}${snippet ? `: ${snippet}` : ''}`, { status });
}
