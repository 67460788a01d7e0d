/**
 * Protocol fixture: an in-memory HTTP + WebSocket server (node:http + ws) that speaks the `/v1`
 * contract of `@ramify/contracts` (routes, error bodies, stream framing, NDJSON template progress)
 * for client tests. It runs no sandboxes: commands are test-supplied scripts. Tests using it are
 * protocol tests of the SDK and CLI, not tests of a runtime or of the daemon.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { RamifyError, StreamChannel, httpStatusFor, type CommandRequest, type StreamControl } from '@ramify/contracts';
import { FixtureState } from './fixture-state.js';
import type { CommandScript, FixtureProcess, ProcessSubscriber } from './fixture-processes.js';
import { httpRoutes } from './fixture-routes.js';

export type { CommandScript, ScriptContext, ScriptExit } from './fixture-processes.js';
export { FixtureState } from './fixture-state.js';

/** Options of {@link startContractServer}. */
export interface ContractServerOptions {
  /** Bearer key the server accepts; default `rmf_test`. */
  apiKey?: string;
  /** Custom scripts by command line; `undefined` falls back to the built-ins (`echo`, `exit N`, `cat`). */
  scripts?: (cmd: string) => CommandScript | undefined;
  /**
   * When the command stream sends `started`: `first` (default), or `after-exit` to reproduce a very
   * short command whose exit frame overtakes `started` on the daemon.
   */
  startedFrame?: 'first' | 'after-exit';
  /** Per-stream limit of command results, bytes, sent in `started` and applied by `POST /commands`; default 32 MiB. */
  maxOutputBytes?: number;
  /** `omit`: send `started` without `maxOutputBytes`, as daemons before it did. Default `send`. */
  startedLimit?: 'send' | 'omit';
}

/** One request the fixture saw (WebSocket upgrades included, with `ws: true`). */
export interface SeenRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  ws: boolean;
  /** The request's headers (lower-case names), the bearer key left out. */
  headers: Record<string, string>;
}

/** `req`'s headers as strings, without `authorization`. */
function seenHeaders(req: IncomingMessage): Record<string, string> {
  return Object.fromEntries(Object.entries(req.headers).filter(([k, v]) => k !== 'authorization' && v !== undefined).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v)]));
}

/** A running fixture. */
export interface ContractServer {
  /** Base URL, e.g. `http://127.0.0.1:40123`. */
  url: string;
  apiKey: string;
  state: FixtureState;
  requests: SeenRequest[];
  close(): Promise<void>;
}

/** Parsed request handed to route handlers. */
export interface FixtureRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  params: string[];
  body(): Promise<Buffer>;
  json<T>(): Promise<T>;
  raw: IncomingMessage;
}

/** What a route handler returns: a JSON body with a status, or a hand-written response. */
export type FixtureReply = { status: number; json?: unknown } | { handled: true };

function sendError(res: ServerResponse, err: unknown): void {
  const e = err instanceof RamifyError ? err : new RamifyError('INTERNAL', String(err));
  res.writeHead(httpStatusFor(e.code), { 'content-type': 'application/json' }).end(JSON.stringify(e.toBody()));
}

function toRequest(req: IncomingMessage, url: URL, params: string[]): FixtureRequest {
  let body: Promise<Buffer> | undefined;
  const readBody = (): Promise<Buffer> => (body ??= (async () => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  })());
  return {
    method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, params, raw: req, body: readBody,
    json: async <T>() => { const b = await readBody(); return (b.length ? JSON.parse(b.toString('utf8')) : {}) as T; },
  };
}

/** Stream one process's output over `ws` per the contract framing. */
function streamProcess(ws: WebSocket, proc: FixtureProcess, from: { stdout: number; stderr: number }, afterExit?: () => void): () => void {
  const pending = new Set<Promise<void>>();
  const send = (data: Uint8Array | string): void => {
    const p = new Promise<void>((resolve) => ws.send(data, () => resolve()));
    pending.add(p);
    void p.then(() => pending.delete(p));
  };
  const sub: ProcessSubscriber = {
    onData: (channel, bytes) => {
      const frame = Buffer.alloc(bytes.byteLength + 1);
      frame[0] = channel === 'stdout' ? StreamChannel.stdout : StreamChannel.stderr;
      frame.set(bytes, 1);
      send(frame);
    },
    onExit: (exit) => {
      send(JSON.stringify({ type: 'exit', ...exit } satisfies StreamControl));
      afterExit?.();
      ws.close(1000);
    },
    drop: async () => {
      await Promise.all(pending);
      ws.terminate();
    },
    goAway: () => { ws.close(1001, 'agent channel closed; re-attach later'); return true; },
  };
  return proc.subscribe(sub, from);
}

/** An error frame (after `started` it answers one client input and the stream goes on). */
function sendErrorFrame(ws: WebSocket, err: unknown): RamifyError {
  const e = err instanceof RamifyError ? err : new RamifyError('INTERNAL', String(err));
  ws.send(JSON.stringify({ type: 'error', code: e.code, message: e.message } satisfies StreamControl));
  return e;
}

function wsFail(ws: WebSocket, err: unknown): void {
  const e = sendErrorFrame(ws, err);
  ws.close(httpStatusFor(e.code) < 500 ? 1008 : 1011);
}

/** Start the fixture on 127.0.0.1 (random port). */
export async function startContractServer(opts: ContractServerOptions = {}): Promise<ContractServer> {
  const apiKey = opts.apiKey ?? 'rmf_test';
  const state = new FixtureState(opts.scripts ?? (() => undefined), opts.maxOutputBytes);
  const startedFrame = (pid: number): string =>
    JSON.stringify({ type: 'started', pid, ...(opts.startedLimit === 'omit' ? {} : { maxOutputBytes: state.maxOutputBytes }) } satisfies StreamControl);
  const requests: SeenRequest[] = [];
  const routes = httpRoutes(state);
  const authorized = (req: IncomingMessage): boolean => req.headers.authorization === `Bearer ${apiKey}`;
  const unauthorized = new RamifyError('UNAUTHORIZED', 'missing or invalid API key');

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fixture');
    requests.push({ method: req.method ?? 'GET', path: url.pathname, query: Object.fromEntries(url.searchParams), ws: false, headers: seenHeaders(req) });
    if (url.pathname !== '/v1/health' && !authorized(req)) return sendError(res, unauthorized);
    for (const route of routes) {
      const m = route.method === req.method ? route.pattern.exec(url.pathname) : null;
      if (!m) continue;
      route.handler(toRequest(req, url, m.slice(1).map(decodeURIComponent)), res).then((reply) => {
        if ('handled' in reply) return;
        if (reply.json === undefined) res.writeHead(reply.status).end();
        else res.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.json));
      }, (err: unknown) => (res.headersSent ? res.destroy() : sendError(res, err)));
      return;
    }
    sendError(res, new RamifyError('BAD_REQUEST', `no route ${req.method} ${url.pathname}`));
  });

  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://fixture');
    requests.push({ method: 'GET', path: url.pathname, query: Object.fromEntries(url.searchParams), ws: true, headers: seenHeaders(req) });
    const refuse = (err: RamifyError): void => {
      const body = JSON.stringify(err.toBody());
      socket.end(`HTTP/1.1 ${err.status} Refused\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    };
    if (!authorized(req)) return refuse(unauthorized);
    const cmd = /^\/v1\/sandboxes\/([^/]+)\/commands\/stream$/.exec(url.pathname);
    const attach = /^\/v1\/sandboxes\/([^/]+)\/processes\/(\d+)\/stream$/.exec(url.pathname);
    // Like the daemon: the upgrade succeeds, then a failure is an error frame and close 1008/1011.
    if (!cmd && !attach) return refuse(new RamifyError('BAD_REQUEST', `no stream at ${url.pathname}`));
    wss.handleUpgrade(req, socket, head, (ws) => {
      try {
        const sbx = state.inState(decodeURIComponent((cmd ?? attach)![1]), ['running']);
        if (attach) {
          const proc = state.process(sbx, Number(attach[2]));
          const from = { stdout: Number(url.searchParams.get('stdout') ?? 0), stderr: Number(url.searchParams.get('stderr') ?? 0) };
          ws.send(startedFrame(proc.pid));
          ws.on('close', streamProcess(ws, proc, from));
          return;
        }
        let proc: FixtureProcess | undefined;
        ws.on('message', (data, isBinary) => {
          const buf = data as Buffer;
          if (isBinary) {
            try { if (proc && buf[0] === StreamChannel.stdin) proc.writeStdin(buf.subarray(1)); } catch (err) { sendErrorFrame(ws, err); }
            return;
          }
          const msg = JSON.parse(buf.toString('utf8')) as StreamControl;
          if (msg.type === 'closeStdin') proc?.closeStdin();
          if (msg.type !== 'start' || proc) return;
          try {
            const p = state.startProcess(sbx, msg.request as CommandRequest);
            proc = p;
            const started = (): void => ws.send(startedFrame(p.pid));
            const late = opts.startedFrame === 'after-exit';
            if (!late) started();
            ws.on('close', streamProcess(ws, p, { stdout: 0, stderr: 0 }, late ? started : undefined));
          } catch (err) { wsFail(ws, err); }
        });
      } catch (err) { wsFail(ws, err); }
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`, apiKey, state, requests,
    close: async () => {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
