/**
 * What the ingress answers when it does not proxy: the API's `ErrorBody` JSON for API clients, a small
 * HTML page when the client accepts `text/html` (a browser), with the status of the error's code; 503s
 * carry `Retry-After`. Never a redirect to a login.
 */
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { RamifyError } from '@ramify/contracts';

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** True when the client prefers HTML (its Accept names text/html). */
export function wantsHtml(accept: string | undefined): boolean {
  return accept !== undefined && /\btext\/html\b/i.test(accept);
}

/** Headers and body of the answer to `err`. */
export function errorAnswer(err: RamifyError, html: boolean): { status: number; headers: Record<string, string>; body: string } {
  const status = err.status;
  const headers: Record<string, string> = { 'cache-control': 'no-store' };
  const retry = err.details?.retryAfterSeconds;
  if (status === 503) headers['retry-after'] = String(typeof retry === 'number' ? retry : 2);
  if (!html) return { status, headers: { ...headers, 'content-type': 'application/json; charset=utf-8' }, body: JSON.stringify(err.toBody()) };
  const title = `${status} ${STATUS_CODES[status] ?? 'Error'}`;
  const body = `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>` +
    `<body style="font-family:sans-serif;max-width:40em;margin:3em auto"><h1>${escapeHtml(title)}</h1>` +
    `<p>${escapeHtml(err.message)}</p><p><small>Ramify ingress &middot; ${escapeHtml(err.code)}</small></p></body></html>\n`;
  return { status, headers: { ...headers, 'content-type': 'text/html; charset=utf-8' }, body };
}

/** Answer an HTTP request with `err`; returns the body bytes sent (0 when it could only close). */
export function sendError(res: ServerResponse, err: RamifyError, accept: string | undefined): number {
  if (res.headersSent) {
    res.destroy();
    return 0;
  }
  const answer = errorAnswer(err, wantsHtml(accept));
  const bytes = Buffer.byteLength(answer.body);
  res.writeHead(answer.status, { ...answer.headers, 'content-length': bytes });
  res.end(answer.body);
  return bytes;
}

/** Answer an upgrade request (a raw socket) with `err`, then close it. */
export function sendUpgradeError(socket: Socket, err: RamifyError): void {
  const answer = errorAnswer(err, false);
  const head = [`HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? 'Error'}`, ...Object.entries(answer.headers).map(([k, v]) => `${k}: ${v}`), `content-length: ${Buffer.byteLength(answer.body)}`, 'connection: close'];
  socket.end(`${head.join('\r\n')}\r\n\r\n${answer.body}`);
}
