/**
 * One WebSocket connection to a process output stream (`/commands/stream` or `/processes/:pid/stream`),
 * speaking the contract's framing: binary frames are `[channel byte, ...payload]` (1 stdout, 2 stderr,
 * 0 stdin from the client), text frames are JSON {@link StreamControl} messages.
 */
import type { BoundRoute } from '../http.js';
import type { ClientRequest, IncomingMessage } from 'node:http';
import type WebSocket from 'ws';
import { loadWebSocket } from '../ws.js';
import { StreamChannel } from '@ramify/contracts/client';
import type { StreamControl } from '@ramify/contracts';
import type { ApiClient, Query } from '../http.js';
import { RamifyError, errorFromCode, errorFromResponse } from '../errors.js';

/** Exit status as carried by the `exit` control frame. */
export interface StreamExit {
  exitCode: number | null;
  signal: string | null;
  error: string | null;
}

/** How a stream connection ended. `dropped` means the socket closed without an exit or error frame. */
export type StreamEnd =
  | { kind: 'exit'; exit: StreamExit }
  | { kind: 'error'; error: RamifyError }
  | { kind: 'dropped'; reason: string };

/** Callbacks of one connection; `onData` payloads are never copied, treat them as read-only. */
export interface StreamSocketEvents {
  onData: (channel: 'stdout' | 'stderr', bytes: Uint8Array) => void;
  /** The `started` frame: the pid, and the daemon's per-stream limit of results, bytes (absent from older daemons). */
  onStarted?: (pid: number, maxOutputBytes: number | undefined) => void;
}

/** An open stream connection. */
export interface StreamSocket {
  /** Settles once: exit frame, error frame, or the socket closing. Never rejects. */
  readonly ended: Promise<StreamEnd>;
  /** Resolves when the socket has closed. */
  readonly closed: Promise<void>;
  /** Send a control message (e.g. `start`, `closeStdin`). */
  sendControl(message: StreamControl): void;
  /** Send stdin bytes (channel 0). */
  sendStdin(bytes: Uint8Array): void;
  /** True while the socket can send. */
  readonly isOpen: boolean;
  /** Close the socket (normal closure); `ended` settles as `dropped` unless it already settled. */
  close(): void;
}

/**
 * Open a stream socket. Resolves once the WebSocket is open. Rejects with the API's error when the
 * upgrade is refused (e.g. `SANDBOX_NOT_FOUND`), with `ConnectionError` when the API is unreachable,
 * and with `TimeoutError`-like `REQUEST_TIMEOUT` when the handshake exceeds the request deadline.
 */
export async function openStreamSocket(api: ApiClient, route: BoundRoute, query: Query | undefined, events: StreamSocketEvents): Promise<StreamSocket> {
  const WS = await loadWebSocket();
  const url = route.wsUrl(query);
  const { path } = route;
  const timeoutMs = api.config.requestTimeoutMs;
  const ws = new WS(url, { headers: api.authHeaders(), ...(timeoutMs > 0 ? { handshakeTimeout: timeoutMs } : {}) });
  let settleEnd!: (end: StreamEnd) => void;
  let endSettled = false;
  const ended = new Promise<StreamEnd>((resolve) => {
    settleEnd = (end) => {
      if (endSettled) return;
      endSettled = true;
      resolve(end);
    };
  });
  let errorFrame: RamifyError | undefined;
  let started = false;

  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  const socket: StreamSocket = {
    ended,
    closed,
    get isOpen() { return ws.readyState === WS.OPEN; },
    sendControl: (message) => ws.send(JSON.stringify(message)),
    sendStdin: (bytes) => {
      const frame = new Uint8Array(bytes.byteLength + 1);
      frame[0] = StreamChannel.stdin;
      frame.set(bytes, 1);
      ws.send(frame);
    },
    close: () => {
      if (ws.readyState === WS.OPEN || ws.readyState === WS.CONNECTING) ws.close(1000);
    },
  };

  ws.on('message', (data: WebSocket.RawData, isBinary: boolean) => {
    if (endSettled && isBinary) return;
    const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
    if (isBinary) {
      if (buf.length === 0) return;
      const channel = buf[0];
      if (channel === StreamChannel.stdout) events.onData('stdout', buf.subarray(1));
      else if (channel === StreamChannel.stderr) events.onData('stderr', buf.subarray(1));
      return;
    }
    let msg: StreamControl;
    try { msg = JSON.parse(buf.toString('utf8')) as StreamControl; } catch { return; }
    if (msg.type === 'started') {
      started = true;
      events.onStarted?.(msg.pid, typeof msg.maxOutputBytes === 'number' ? msg.maxOutputBytes : undefined);
    } else if (endSettled) {
      return;
    } else if (msg.type === 'exit') {
      settleEnd({ kind: 'exit', exit: { exitCode: msg.exitCode, signal: msg.signal, error: msg.error } });
      // A very short command's exit may overtake its `started` frame; then let the server close, so
      // `started` still arrives.
      if (started) socket.close();
    } else if (msg.type === 'error') {
      // Before `started` an error ends the stream (the server closes 1008/1011). After it, an error
      // answers one client input and the stream goes on; it only counts if the socket then closes.
      errorFrame = errorFromCode(msg.code, msg.message);
      if (!started) {
        settleEnd({ kind: 'error', error: errorFrame });
        socket.close();
      }
    }
  });

  return new Promise<StreamSocket>((resolve, reject) => {
    let opened = false;
    ws.on('unexpected-response', (req, res) => rejectRefusedUpgrade(api, path, req, res, reject));
    ws.on('open', () => {
      opened = true;
      resolve(socket);
    });
    ws.on('error', (err: Error) => {
      if (opened) return;
      if (/timeout/i.test(err.message)) {
        reject(errorFromCode('REQUEST_TIMEOUT', `WebSocket ${path} handshake timed out after ${timeoutMs} ms (API ${api.config.apiUrl})`));
      } else reject(api.connectionError(Object.assign(new Error(err.message), { cause: err })));
    });
    ws.on('close', (code: number, reason: Buffer) => {
      if (!opened) reject(api.connectionError(new Error(`WebSocket closed before opening (${code})`)));
      if (errorFrame) settleEnd({ kind: 'error', error: errorFrame });
      else if (code === 1008) settleEnd({ kind: 'error', error: errorFromCode('BAD_REQUEST', `stream ${path} refused: ${reason.toString('utf8') || 'policy violation'}`) });
      else settleEnd({ kind: 'dropped', reason: `closed with ${code}${reason.length ? ` ${reason.toString('utf8')}` : ''}` });
    });
  });
}

/** Reject with the API's error body of a refused WebSocket upgrade (`unexpected-response`). */
export function rejectRefusedUpgrade(api: ApiClient, path: string, req: ClientRequest, res: IncomingMessage, reject: (err: Error) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('end', () => {
    reject(api.withAuthHint(errorFromResponse(res.statusCode ?? 500, Buffer.concat(chunks).toString('utf8'), `WebSocket ${path}`)));
    req.destroy();
  });
  res.on('error', (err) => reject(api.connectionError(err)));
}

/** What {@link startOnStream} saw first: the process started (its pid), or the stream ended before that. */
export type StreamStart = { pid: number } | { end: StreamEnd };

/** Where a starting stream's frames go: the output sink's `push` and `limitTo` (`OutputSink`). */
export interface StartSink {
  push(channel: 'stdout' | 'stderr', bytes: Uint8Array): void;
  limitTo(maxOutputBytes: number): void;
}

/**
 * Open a stream route that starts a process (`/commands/stream`, `/pty/stream`), send its start message,
 * and wait for the `started` frame or the stream's end, whichever comes first. `started` also settles
 * after an end that overtook it (a process that exits at once still sends `started` before its exit).
 * @throws what {@link openStreamSocket} throws.
 */
export async function startOnStream(api: ApiClient, route: BoundRoute, start: StreamControl, sink: StartSink): Promise<{ socket: StreamSocket; started: Promise<number>; first: StreamStart }> {
  let onPid!: (pid: number) => void;
  const started = new Promise<number>((resolve) => { onPid = resolve; });
  const socket = await openStreamSocket(api, route, undefined, {
    onData: (channel, bytes) => sink.push(channel, bytes),
    onStarted: (pid, maxOutputBytes) => {
      if (maxOutputBytes !== undefined) sink.limitTo(maxOutputBytes);
      onPid(pid);
    },
  });
  socket.sendControl(start);
  const first = await Promise.race([started.then((pid): StreamStart => ({ pid })), socket.ended.then((end): StreamStart => ({ end }))]);
  return { socket, started, first };
}
