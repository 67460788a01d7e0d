/**
 * The Host header of an ingress request: `<port>-<sandboxId>.<domain>[:<listenPort>]`, case-insensitive
 * (browsers lower-case host names). Sandbox ids are `sbx_` + 26 Crockford base32 characters; the label
 * may also spell the `_` as `-` (a strict DNS label). Pure functions.
 */

/** What a Host names. */
export interface IngressHost {
  port: number;
  /** The sandbox id as stored (`sbx_` + upper-case ULID). */
  sandboxId: string;
}

/** Why a Host is not an ingress host (a message for the 400 answer). */
export interface BadIngressHost {
  problem: string;
}

const LABEL = /^([0-9]{1,5})-sbx[_-]([0-9a-z]{26})$/;

/**
 * Parse `host` (a Host header value, maybe with `:port`, maybe an IPv6 literal) against the ingress `domain`.
 * @returns the port and sandbox id, or the problem.
 */
export function parseIngressHost(host: string | undefined, domain: string): IngressHost | BadIngressHost {
  const expected = `expected <port>-<sandboxId>.${domain}`;
  if (!host) return { problem: `no Host header (${expected})` };
  const name = host.trim().toLowerCase().replace(/:[0-9]*$/, '').replace(/\.$/, '');
  const suffix = `.${domain.toLowerCase()}`;
  if (!name.endsWith(suffix)) return { problem: `host '${name}' is not under the ingress domain '${domain}' (${expected})` };
  const label = name.slice(0, -suffix.length);
  if (label === '' || label.includes('.')) return { problem: `host '${name}' has no sandbox part (${expected})` };
  const m = LABEL.exec(label);
  if (!m) return { problem: `host '${name}' does not name a port and a sandbox (${expected}, e.g. 3000-sbx_01j….${domain})` };
  const port = Number(m[1]);
  if (port < 1 || port > 65535) return { problem: `port ${m[1]} in host '${name}' is not a port: a port is an integer from 1 to 65535` };
  return { port, sandboxId: `sbx_${(m[2] as string).toUpperCase()}` };
}

/** Type guard: a parsed host rather than a problem. */
export function isIngressHost(value: IngressHost | BadIngressHost): value is IngressHost {
  return 'sandboxId' in value;
}
