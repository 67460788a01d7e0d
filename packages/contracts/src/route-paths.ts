/**
 * Paths from the route table ({@link ROUTES}, routes.ts): {@link routePath} fills a route's template
 * (what the SDK calls), {@link matchRoute} finds the route and parameters of a request's path (what a
 * forwarding layer needs to send a call on a sandbox to the host that holds it).
 */
import { ROUTES, type OperationId, type RouteDef } from './routes.js';

/** The parameter names of a path template: `'/v1/sandboxes/:id/processes/:pid'` → `'id' | 'pid'`. */
export type PathParamNames<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? Name | PathParamNames<`/${Rest}`>
  : P extends `${string}:${infer Name}`
    ? Name
    : never;

/** The parameters `route`'s path needs, each a string or a number (a pid, a port). */
export type RouteParams<R extends Pick<RouteDef, 'path'>> = { [K in PathParamNames<R['path']>]: string | number };

/**
 * The concrete path of `route` with `params` filled in, each URI-encoded: `routePath(ROUTES.pauseSandbox,
 * { id: 'sbx_1' })` is `/v1/sandboxes/sbx_1/pause`.
 * @throws Error when a parameter the template names is missing (a programming error; the types prevent it).
 */
export function routePath<R extends Pick<RouteDef, 'path'>>(route: R, params: RouteParams<R>): string {
  const values = params as Record<string, string | number | undefined>;
  return route.path.replace(/:([A-Za-z]+)/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`route ${route.path} needs parameter '${name}'`);
    return encodeURIComponent(String(value));
  });
}

/** A request matched to its route: its operation id, the route, and the path's parameters (decoded). */
export interface RouteMatch {
  operationId: OperationId;
  route: RouteDef;
  params: Record<string, string>;
}

interface CompiledRoute {
  operationId: OperationId;
  route: RouteDef;
  pattern: RegExp;
  names: string[];
}

/** Literal segments before parameters: `/v1/sandboxes/:id/files/watch` wins over `/v1/sandboxes/:id/files/:x` (none today, but the order is fixed). */
const COMPILED: readonly CompiledRoute[] = (Object.entries(ROUTES) as Array<[OperationId, RouteDef]>)
  .map(([operationId, route]) => {
    const names: string[] = [];
    const source = route.path
      .split('/')
      .map((segment) => {
        if (!segment.startsWith(':')) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        names.push(segment.slice(1));
        return '([^/]+)';
      })
      .join('/');
    return { operationId, route, pattern: new RegExp(`^${source}$`), names };
  })
  .sort((a, b) => a.names.length - b.names.length);

/**
 * The route serving `method` on `pathname` (no query string), or null when none does. A `HEAD` matches
 * the `GET` route. Parameters are URI-decoded; one that does not decode leaves the path unmatched.
 */
export function matchRoute(method: string, pathname: string): RouteMatch | null {
  const wanted = method.toUpperCase() === 'HEAD' ? 'GET' : method.toUpperCase();
  for (const { operationId, route, pattern, names } of COMPILED) {
    if (route.method !== wanted) continue;
    const found = pattern.exec(pathname);
    if (!found) continue;
    try {
      const params = Object.fromEntries(names.map((name, i) => [name, decodeURIComponent(found[i + 1]!)]));
      return { operationId, route, params };
    } catch {
      return null;
    }
  }
  return null;
}
