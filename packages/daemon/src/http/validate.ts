/**
 * Request validation with the contract's zod schemas. Failures are `VALIDATION_FAILED` (400) whose
 * message names every offending field once, in plain words (contracts/src/issue-messages.ts), e.g.
 * `body: unknown field 'colour' (allowed: ...); body.timeoutMs: must be an integer from 1 to 86400000, got 1000000000000`.
 */
import { Readable } from 'node:stream';
import { RamifyError, plainErrorMap, plainIssues } from '@ramify/contracts';
import type { z } from 'zod';

export type RequestPart = 'body' | 'query' | 'params';

/** Most fields one message lists (`details.issues` lists up to {@link MAX_REPORTED_ISSUES}). */
const MAX_LISTED_ISSUES = 10;
/** Most fields `details.issues` lists: a body of thousands of bad elements answers with a bounded error. */
const MAX_REPORTED_ISSUES = 100;

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
