/**
 * Request validation with the contract's zod schemas. Failures are `VALIDATION_FAILED` (400) whose
 * message names every offending field once, in plain words (contracts/src/issue-messages.ts), e.g.
 * `body: unknown field 'colour' (allowed: ...); body.timeoutMs: must be an integer from 1 to 86400000, got 1000000000000`.
 */
import { Readable } from 'node:stream';
import { RamifyError, invalidField, plainErrorMap, plainIssues } from '@ramify/contracts';
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
 * Parse `value` with `schema`.
 * @throws RamifyError `VALIDATION_FAILED` naming each offending field (`details.issues`: `{ path, message }[]`).
 */
export function validate<S extends z.ZodType>(schema: S, value: unknown, where: RequestPart): z.infer<S> {
  if (value instanceof Readable) {
    throw new RamifyError('VALIDATION_FAILED', `${where}: expected a JSON body (Content-Type: application/json)`, { issues: [{ path: where, message: 'not JSON' }] });
  }
  const result = schema.safeParse(value, { error: plainErrorMap(value, schema) });
  if (result.success) return result.data;
  const issues = plainIssues(result.error.issues, where);
  const listed = issues.slice(0, MAX_LISTED_ISSUES).map((i) => `${i.path}: ${i.message}`);
  if (issues.length > MAX_LISTED_ISSUES) listed.push(`and ${issues.length - MAX_LISTED_ISSUES} more`);
  throw new RamifyError('VALIDATION_FAILED', listed.join('; '), { issues: issues.slice(0, MAX_REPORTED_ISSUES) });
}
