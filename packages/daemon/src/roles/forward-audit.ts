/**
 * Audit of forwarded calls (docs/design/SCALE-OUT.md): the API process that forwards a call records its
 * audit entry, once, when the host's answer has gone back to the caller (its status, the host's error code,
 * the sandbox a create made). The host must not record it again, but it must record a call made to it
 * directly (not through an API process). So the API signs each HTTP call it forwards:
 * `x-ramify-forwarded: <ms>.<HMAC-SHA256 hex of "<ms> <method> <url>">`, keyed by the store's `forwarding`
 * cluster secret (readable only by processes with access to the store); the host skips its audit entry for
 * a call with a valid signature made at most {@link FORWARD_SIGNATURE_TTL_MS} ago, and tells the API its
 * error code and created sandbox in {@link AUDIT_ERROR_HEADER} and {@link AUDIT_SANDBOX_HEADER}, which the API
 * strips before the answer reaches the caller. A client cannot forge the signature, so a direct call on a
 * host is always audited there. WebSocket streams are audited by the host: their outcome (the process
 * started, or why not) is decided in the stream's first frames, which the API passes through unread.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Core } from '@ramify/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** The request header an API process signs a forwarded call with. */
export const FORWARDED_HEADER = 'x-ramify-forwarded';
/** Response headers a host answers a signed call with, for the API's audit entry (stripped by the API). */
export const AUDIT_ERROR_HEADER = 'x-ramify-audit-error-code';
export const AUDIT_SANDBOX_HEADER = 'x-ramify-audit-sandbox-id';
/** How old a signature may be when the host checks it (ms): hosts' clocks are within 2 s of the database's. */
export const FORWARD_SIGNATURE_TTL_MS = 60_000;
/** The store's cluster secret the signatures are keyed by. */
const SECRET_NAME = 'forwarding';

const mac = (secret: string, atMs: number, method: string, url: string): string =>
  createHmac('sha256', secret).update(`${atMs} ${method} ${url}`).digest('hex');

/** The {@link FORWARDED_HEADER} value for a call of `method` on `url` (path and query) at `atMs`. */
export function signForwarded(secret: string, method: string, url: string, atMs: number): string {
  return `${atMs}.${mac(secret, atMs, method, url)}`;
}

/** Whether `header` is a valid signature of `method` `url`, made within {@link FORWARD_SIGNATURE_TTL_MS} of `nowMs`. */
export function isSignedForward(secret: string, header: string | undefined, method: string, url: string, nowMs: number): boolean {
  const match = /^(\d{1,16})\.([0-9a-f]{64})$/.exec(header ?? '');
  if (!match) return false;
  const atMs = Number(match[1]);
  if (Math.abs(nowMs - atMs) > FORWARD_SIGNATURE_TTL_MS) return false;
  return timingSafeEqual(Buffer.from(match[2] as string, 'hex'), Buffer.from(mac(secret, atMs, method, url), 'hex'));
}

/** The store's forwarding secret, read once per process (the first process to ask makes it). */
export function forwardingSecret(core: Pick<Core, 'store'>): () => Promise<string> {
  let secret: Promise<string> | null = null;
  return () => {
    secret ??= core.store.clusterSecret(SECRET_NAME).catch((err: unknown) => {
      secret = null;
      throw err;
    });
    return secret;
  };
}

/**
 * The host role's side: mark a call signed by an API process (`request.ramify.forwarded`: the audit hook
 * then leaves it to the API) and answer it with its error code and created sandbox for the API's entry.
 * Install after the auth hook.
 */
export function installForwardedCheck(app: FastifyInstance, core: Core): void {
  const secret = forwardingSecret(core);
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const header = request.headers[FORWARDED_HEADER];
    if (typeof header !== 'string') return;
    request.ramify.forwarded = isSignedForward(await secret(), header, request.method, request.url, core.clock.now());
  });
  app.addHook('onSend', async (request, reply, payload) => {
    if (!request.ramify?.forwarded) return payload;
    if (request.ramify.errorCode) void reply.header(AUDIT_ERROR_HEADER, request.ramify.errorCode);
    if (request.ramify.sandboxId) void reply.header(AUDIT_SANDBOX_HEADER, request.ramify.sandboxId);
    return payload;
  });
}
