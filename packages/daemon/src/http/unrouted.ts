/**
 * Answers for requests no route takes, in the API's own error layout (`{ error: { code, message, details } }`)
 * rather than Fastify's (`{ error: 'Bad Request', code: 'FST_ERR_...', statusCode }`, the whole URL echoed):
 * an unknown path is `404 ROUTE_NOT_FOUND`; a known path asked with another method is
 * `405 METHOD_NOT_ALLOWED` naming the methods it takes (and an `Allow` header, RFC 9110 §15.5.6); a URL
 * Fastify's router refuses (a path segment longer than {@link MAX_PATH_SEGMENT_CHARS}, a bad
 * percent-encoding) is `400 VALIDATION_FAILED` at `path`. Every path a message repeats has each segment
 * cut as received strings are (contracts/src/quote.ts).
 */
import { invalidField, matchRoute, RamifyError, truncate } from '@ramify/contracts';

/**
 * Longest path segment Fastify's router takes, characters (its `maxParamLength`; Fastify's default, 100,
 * answered a 101-character id with its own 414 and the whole URL): longer ones answer `VALIDATION_FAILED`
 * at `path`. Ids up to this length reach the routes, whose not-found errors cut them.
 */
export const MAX_PATH_SEGMENT_CHARS = 1024;

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** `url`'s path (no query) with each segment cut to the quoted length: `/v1/sandboxes/sbx_AAAA...`. */
export function pathForMessage(url: string): string {
  const path = url.split('?')[0] ?? '';
  return path.split('/').map((segment) => truncate(segment)).join('/');
}

/** The methods the API takes on `url`'s path (empty: no route has that path). */
export function methodsOf(url: string): string[] {
  const path = url.split('?')[0] ?? '';
  return METHODS.filter((method) => matchRoute(method, path) !== null);
}

/**
 * The error for `method url` that no route took: `METHOD_NOT_ALLOWED` (405; details `method`, `allowed`)
 * when the path is a route's with other methods, else `ROUTE_NOT_FOUND` (404).
 */
export function unroutedError(method: string, url: string): RamifyError {
  const path = pathForMessage(url);
  const allowed = methodsOf(url);
  if (allowed.length > 0 && !allowed.includes(method.toUpperCase())) {
    return new RamifyError('METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}: it takes ${allowed.join(', ')}`, { method, allowed });
  }
  return new RamifyError('ROUTE_NOT_FOUND', `no route ${method} ${path}`);
}

/**
 * The error for a URL Fastify's router refused before any route or hook ran (its `frameworkErrors`):
 * `FST_ERR_MAX_PARAM_LENGTH` and `FST_ERR_BAD_URL` are `VALIDATION_FAILED` at `path`; anything else a
 * `BAD_REQUEST` in Fastify's words, cut.
 */
export function frameworkError(error: Error & { code?: string }): RamifyError {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') return invalidField('path', `a segment of the path is longer than ${MAX_PATH_SEGMENT_CHARS} characters`);
  if (error.code === 'FST_ERR_BAD_URL') return invalidField('path', 'not a valid URL path (a bad percent-encoding)');
  return new RamifyError('BAD_REQUEST', truncate(error.message));
}
