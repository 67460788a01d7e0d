/**
 * Request validation with the contract's zod schemas. Failures are `VALIDATION_FAILED` (400) whose
 * message names every offending field once, in plain words (contracts/src/issue-messages.ts), e.g.
 * `body: unknown field 'colour' (allowed: ...); body.timeoutMs: must be an integer from 1 to 86400000, got 1000000000000`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import { RamifyError, invalidField, plainErrorMap, plainIssues, quote } from '@ramify/contracts';
import type { z } from 'zod';

export type RequestPart = 'body' | 'query' | 'params';

/** Most fields one message lists (`details.issues` lists up to {@link MAX_REPORTED_ISSUES}). */
const MAX_LISTED_ISSUES = 10;
/** Most fields `details.issues` lists: a body of thousands of bad elements answers with a bounded error. */
const MAX_REPORTED_ISSUES = 100;
/** Longest JSON parser reason a message repeats, characters (V8's quote a piece of the body). */
const MAX_JSON_REASON_CHARS = 80;

/**
 * The error for a body that is not valid JSON, in the layout of every other bad field:
 * `VALIDATION_FAILED` `body: not valid JSON (<reason, cut>)`, `details.issues` `[{ path: 'body', ... }]`.
 */
export function invalidJsonBody(reason: string): RamifyError {
  const chars = Array.from(reason);
  const short = chars.length > MAX_JSON_REASON_CHARS ? `${chars.slice(0, MAX_JSON_REASON_CHARS).join('')}...` : reason;
  return invalidField('body', `not valid JSON (${short})`);
}

/**
 * Why Fastify's JSON parser refused `text` (its own error says only that it did): `JSON.parse`'s reason,
 * or, for text that is JSON, the prototype keys the parser refuses (`onProtoPoisoning: 'error'`).
 */
export function jsonFailure(text: string): string {
  try {
    JSON.parse(text);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  return 'a __proto__ or constructor.prototype key is not allowed';
}

/**
 * The error for a body a JSON route got with another Content-Type (`text/plain`, fetch's default for a
 * string body; none at all): `VALIDATION_FAILED` on `headers.content-type`, in the layout of every bad
 * field, e.g. `headers.content-type: must be application/json to send a JSON body, got 'text/plain'`;
 * `details.contentType` is the header as sent (null when none was).
 */
function notJsonBody(contentType: string | undefined): RamifyError {
  const got = contentType === undefined ? 'none' : quote(contentType);
  return invalidField('headers.content-type', `must be application/json to send a JSON body, got ${got}`, { field: 'content-type', contentType: contentType ?? null });
}

/** Whether a request with `headers` has a body: RFC 9112 §6.3, none without Content-Length or Transfer-Encoding. */
function hasBody(headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0';
}

/**
 * A JSON route's request body as parsed, before any schema reads it (the API role places a create by it
 * and forwards it as JSON): `{}` for none. A request stream (the raw parser's pass-through: the body came
 * with another Content-Type than JSON) is refused by {@link notJsonBody}, unless it is empty: an empty
 * body is no body, as with `application/json` (app.ts).
 * @throws RamifyError `VALIDATION_FAILED` on `headers.content-type`.
 */
export function jsonBody(body: unknown): unknown {
  if (!(body instanceof Readable)) return body ?? {};
  // The request itself (Fastify hands the parser `request.raw`): its headers say what was sent.
  const headers = (body as Readable & { headers?: IncomingHttpHeaders }).headers;
  if (!headers || hasBody(headers)) throw notJsonBody(headers?.['content-type']);
  return {};
}

/**
 * Parse `value` with `schema`; a body goes through {@link jsonBody} first.
 * @throws RamifyError `VALIDATION_FAILED` naming each offending field (`details.issues`: `{ path, message }[]`).
 */
export function validate<S extends z.ZodType>(schema: S, value: unknown, where: RequestPart): z.infer<S> {
  if (value instanceof Readable) value = jsonBody(value);
  const result = schema.safeParse(value, { error: plainErrorMap(value, schema) });
  if (result.success) return result.data;
  const issues = plainIssues(result.error.issues, where);
  const listed = issues.slice(0, MAX_LISTED_ISSUES).map((i) => `${i.path}: ${i.message}`);
  if (issues.length > MAX_LISTED_ISSUES) listed.push(`and ${issues.length - MAX_LISTED_ISSUES} more`);
  throw new RamifyError('VALIDATION_FAILED', listed.join('; '), { issues: issues.slice(0, MAX_REPORTED_ISSUES) });
}
