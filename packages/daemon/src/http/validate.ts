/**
 * Request validation with the contract's zod schemas. Failures are `VALIDATION_FAILED` (400) whose
 * message names every offending field, e.g. `body: unknown field 'colour'; body.timeoutMs: Too big ...`.
 */
import { Readable } from 'node:stream';
import { RamifyError } from '@ramify/contracts';
import type { z } from 'zod';

export type RequestPart = 'body' | 'query' | 'params';

/**
 * Parse `value` with `schema`.
 * @throws RamifyError `VALIDATION_FAILED` naming each offending field (`details.issues` lists them).
 */
export function validate<S extends z.ZodType>(schema: S, value: unknown, where: RequestPart): z.infer<S> {
  if (value instanceof Readable) {
    throw new RamifyError('VALIDATION_FAILED', `${where}: expected a JSON body (Content-Type: application/json)`, { issues: [{ path: where, message: 'not JSON' }] });
  }
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => {
    const path = [where, ...issue.path.map(String)].join('.');
    if (issue.code === 'unrecognized_keys') {
      const keys = (issue as { keys: string[] }).keys;
      return { path, message: `unknown field${keys.length > 1 ? 's' : ''} ${keys.map((k) => `'${k}'`).join(', ')}` };
    }
    return { path, message: issue.message };
  });
  throw new RamifyError('VALIDATION_FAILED', issues.map((i) => `${i.path}: ${i.message}`).join('; '), { issues });
}
