/**
 * `forwardRequest`: one plain HTTP request (not an upgrade: WebSocket tunnels go through http-proxy-3)
 * sent to a sandbox's server over a pooled agent, and its answer streamed back: node:http on both sides,
 * `pipe` both ways (backpressure, nothing buffered: uploads and downloads of any size, server-sent events
 * chunk by chunk), the same path as the bare proxy the bench compares with. It does what http-proxy-3's
 * `web()` did for us, without its per-request option merging, URL parsing and passes (a tenth of the
 * ingress's CPU per request on the bench machine, docs/design/INGRESS.md):
 * - the client leaving before the answer is complete destroys the upstream request (no connection is left
 *   serving a request nobody reads: it would hold a checkpoint up);
 * - the answer's hop-by-hop headers stay behind (`Connection`, `Keep-Alive`, `Transfer-Encoding`, ...:
 *   they are about the ingress's connection to the sandbox; Node frames the client's side itself), the
 *   others keep their case and order;
 * - an upstream that fails before answering is reported (`onError`: the caller answers 502); one that
 *   breaks off mid-answer ends the client's response abruptly (it cannot be answered any more).
 */
import { request, type Agent, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';

/** Where and how one request goes. */
export interface ForwardTarget {
  host: string;
  port: number;
  agent: Agent;
  /** Path and query as the sandbox's server gets them. */
  path: string;
  /** Request headers as the sandbox's server gets them (see `upstreamHeaders`). */
  headers: OutgoingHttpHeaders;
}

export interface ForwardHandlers {
  /** The answer's head arrived (before it is written to the client). */
  onResponse?: (answer: IncomingMessage) => void;
  /** The upstream request failed before an answer (a refused dial, a reset); not called when the client left. */
  onError: (err: Error) => void;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'te', 'trailer', 'upgrade']);

/** Send `req` to `target` and stream the answer into `res`. */
export function forwardRequest(req: IncomingMessage, res: ServerResponse, target: ForwardTarget, handlers: ForwardHandlers): void {
  const upstream = request({ host: target.host, port: target.port, method: req.method, path: target.path, headers: target.headers, agent: target.agent });
  const failed = (err: Error): void => {
    upstream.destroy();
    // The client is gone: nobody to answer.
    if (req.socket.destroyed) return;
    handlers.onError(err);
  };
  res.once('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.once('error', failed);
  upstream.once('error', failed);
  upstream.once('response', (answer: IncomingMessage) => {
    handlers.onResponse?.(answer);
    res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.rawHeaders));
    answer.once('close', () => {
      if (!answer.complete) res.destroy();
    });
    answer.pipe(res);
  });
  req.pipe(upstream);
}

/** `rawHeaders` (name, value, name, value...) without the hop-by-hop ones and those `Connection` names. */
function endToEnd(raw: readonly string[]): string[] {
  const named: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    if ((raw[i] as string).toLowerCase() === 'connection') for (const n of (raw[i + 1] as string).split(',')) named.push(n.trim().toLowerCase());
  }
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (HOP_BY_HOP.has(name) || (named.length > 0 && named.includes(name))) continue;
    out.push(raw[i] as string, raw[i + 1] as string);
  }
  return out;
}
