/**
 * The one error mapping of the API: RamifyError → its status and `{ error: { code, message } }`;
 * Fastify's own client errors (body too large, bad media type) → the nearest stable code; bad JSON →
 * `VALIDATION_FAILED` on `body` (http/validate.ts);
 * anything else → a bare 500 `INTERNAL` and a log line (the details stay in the log).
 */
import { RamifyError, isRamifyError, type ErrorBody } from '@ramify/contracts';
import { invalidJsonBody } from './validate.js';

export interface HttpError {
  status: number;
  body: ErrorBody;
  /** True when nobody meant this error to happen: log it. */
  unexpected: boolean;
}

/** Map any thrown value to the HTTP response the API sends for it. */
export function toHttpError(err: unknown): HttpError {
  if (isRamifyError(err)) {
    // A RamifyError from another copy of contracts is rebuilt so `status`/`toBody` exist.
    const foreign = err as { code: RamifyError['code']; message: string; details?: Record<string, unknown> };
    const ramify = withIssues(err instanceof RamifyError ? err : new RamifyError(foreign.code, foreign.message, foreign.details));
    return { status: ramify.status, body: ramify.toBody(), unexpected: ramify.status >= 500 && ramify.code === 'INTERNAL' };
  }
  const fastify = err as { code?: unknown; statusCode?: unknown; message?: unknown };
  const statusCode = typeof fastify.statusCode === 'number' ? fastify.statusCode : 500;
  const message = typeof fastify.message === 'string' ? fastify.message : 'bad request';
  if (fastify.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || statusCode === 413) {
    return client(new RamifyError('PAYLOAD_TOO_LARGE', `request body is larger than the ${1 << 20} bytes a JSON body may have; upload files with PUT /v1/sandboxes/{id}/files`));
  }
  if (typeof fastify.code === 'string' && fastify.code.startsWith('FST_') && statusCode >= 400 && statusCode < 500) {
    return client(new RamifyError('BAD_REQUEST', message));
  }
  if (statusCode >= 400 && statusCode < 500 && (err as Error)?.name === 'SyntaxError') {
    return client(invalidJsonBody(message));
  }
  return { status: 500, body: { error: { code: 'INTERNAL', message: 'internal error' } }, unexpected: true };
}

/**
 * `err` as every `VALIDATION_FAILED` answers: with `details.issues` (`{ path, message }[]`). Schema issues
 * and hand-made checks (`invalidField`, contracts/src/issue-messages.ts) carry it already; a use-case
 * check that does not yet gets one issue, its path `details.field` (else `request`), its message the error's.
 */
function withIssues(err: RamifyError): RamifyError {
  if (err.code !== 'VALIDATION_FAILED' || Array.isArray(err.details?.['issues'])) return err;
  const field = err.details?.['field'];
  return new RamifyError(err.code, err.message, { ...err.details, issues: [{ path: typeof field === 'string' ? field : 'request', message: err.message }] });
}

function client(err: RamifyError): HttpError {
  return { status: err.status, body: err.toBody(), unexpected: false };
}
