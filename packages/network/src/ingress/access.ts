/**
 * Token access to a sandbox's port: where a request's token comes from, and the one-time exchange of a
 * query parameter for a cookie. A token is taken from the `X-Ramify-Access-Token` header, else the
 * `ramify_access_token` query parameter, else the cookie. A query parameter on a plain navigation (GET or
 * HEAD, no upgrade) is answered with a redirect to the same URL without it, setting an HttpOnly cookie
 * scoped to the host (no Domain attribute: a host-only cookie, so each port URL of each sandbox has its
 * own). Cookie parsing and serialisation: the `cookie` package.
 */
import { parseCookie, stringifySetCookie } from 'cookie';
import { ACCESS_TOKEN_HEADER, ACCESS_TOKEN_QUERY } from '@ramify/contracts';
import { PLACEMENT_HEADER } from '@ramify/core';

/** Name of the cookie a query parameter is exchanged for. */
export const ACCESS_COOKIE = 'ramify_access_token';

/** Where a token came from. */
export type TokenSource = 'header' | 'query' | 'cookie';

/** The token a request presents, if any. */
export interface PresentedToken {
  value: string;
  source: TokenSource;
}

/** The parts of a request the access check reads. */
export interface AccessRequest {
  /** Path and query, as in the request line. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
}

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** The token `request` presents: header first, then query parameter, then cookie. */
export function presentedToken(request: AccessRequest): PresentedToken | null {
  const header = first(request.headers[ACCESS_TOKEN_HEADER]);
  if (header !== undefined) return { value: header.trim(), source: 'header' };
  const query = new URL(request.url, 'http://ingress.invalid').searchParams.get(ACCESS_TOKEN_QUERY);
  if (query !== null) return { value: query, source: 'query' };
  const cookieHeader = first(request.headers.cookie);
  const cookie = cookieHeader ? parseCookie(cookieHeader)[ACCESS_COOKIE] : undefined;
  return cookie !== undefined ? { value: cookie, source: 'cookie' } : null;
}

/** `url` (path and query) without the token query parameter; `url` itself (not re-encoded) when it has none. */
export function withoutTokenParameter(url: string): string {
  if (!url.includes(ACCESS_TOKEN_QUERY)) return url;
  const parsed = new URL(url, 'http://ingress.invalid');
  parsed.searchParams.delete(ACCESS_TOKEN_QUERY);
  return `${parsed.pathname}${parsed.search}`;
}

/** The Set-Cookie value that carries `token` for the request's host from now on. */
export function accessCookie(token: string, options: { secure: boolean }): string {
  return stringifySetCookie({ name: ACCESS_COOKIE, value: token, httpOnly: true, path: '/', sameSite: 'lax', secure: options.secure });
}

/**
 * The request headers as the sandbox's server gets them: no token header, no placement header (an API
 * edge's reservation), the access cookie removed from
 * `Cookie` (the others kept as sent), and `X-Forwarded-For`/`-Proto`/`-Host` set by the ingress (any the
 * client sent are replaced: the ingress is the edge). `hopByHop: 'drop'` (a plain request, not an upgrade)
 * also leaves out the client connection's hop-by-hop headers (RFC 9110 §7.6.1: `Connection`, the headers
 * it names, `Keep-Alive`): whether the ingress's connection to the sandbox stays open is the pool's
 * business, not the client's (a client's `Connection: close` would close a pooled connection). An upgrade
 * keeps them: its `Connection: Upgrade` must reach the server. One pass, a new object (runs per request).
 */
export function upstreamHeaders(headers: Record<string, string | string[] | undefined>, client: { address: string; protocol: 'http' | 'https'; host: string }, hopByHop: 'drop' | 'keep' = 'keep'): Record<string, string | string[] | undefined> {
  const named = hopByHop === 'drop' ? connectionNamed(headers.connection) : null;
  const out: Record<string, string | string[] | undefined> = {};
  for (const name in headers) {
    if (name === ACCESS_TOKEN_HEADER || name === PLACEMENT_HEADER || name === 'x-forwarded-for' || name === 'x-forwarded-proto' || name === 'x-forwarded-host') continue;
    if (named !== null && (name === 'connection' || name === 'keep-alive' || named.includes(name))) continue;
    const value = headers[name];
    if (name !== 'cookie') {
      out[name] = value;
      continue;
    }
    const cookieHeader = first(value);
    if (cookieHeader === undefined || !cookieHeader.includes(`${ACCESS_COOKIE}=`)) {
      out[name] = value;
      continue;
    }
    const kept = cookieHeader.split(';').map((c) => c.trim()).filter((c) => c !== '' && !c.startsWith(`${ACCESS_COOKIE}=`));
    if (kept.length > 0) out[name] = kept.join('; ');
  }
  out['x-forwarded-for'] = client.address;
  out['x-forwarded-proto'] = client.protocol;
  out['x-forwarded-host'] = client.host;
  return out;
}

/** The header names a `Connection` header lists, lower-cased. */
function connectionNamed(connection: string | string[] | undefined): string[] {
  if (connection === undefined) return [];
  return [connection].flat().flatMap((v) => v.split(',')).map((v) => v.trim().toLowerCase());
}
