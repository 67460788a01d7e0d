/**
 * One WebSocket to a watch stream (`/files/watch` to start, `/files/watch/{watchId}` to re-attach),
 * speaking contracts' `WatchControl` text frames.
 */
import type { BoundRoute } from './http.js';
import type WebSocket from 'ws';
import { loadWebSocket } from './ws.js';
import type { WatchControl, WatchEndReason, WatchWireEvent } from '@ramify/contracts';
import type { ApiClient, Query } from './http.js';
import { errorFromCode, type RamifyError } from './errors.js';
import { rejectRefusedUpgrade } from './commands/stream-socket.js';

/** How a watch connection ended: the watch ended (`end` frame), or the socket closed under it. */
export type WatchSocketEnd = { kind: 'end'; reason: WatchEndReason; message?: string } | { kind: 'dropped'; reason: string };

/** An open watch connection, past its `watching` frame. */
export interface WatchSocket {
  readonly watchId: string;
  readonly path: string;
  readonly recursive: boolean;
  /** Sequence number of the first event this connection delivers. */
  readonly from: number;
  /** Settles once; never rejects. */
  readonly ended: Promise<WatchSocketEnd>;
  /** Ask the daemon to stop the watch (answered by the `end` frame). */
  sendStop(): void;
  close(): void;
}

/**
 * Open a watch stream and wait for its `watching` frame; `onEvents` gets every later batch in order.
 * @throws RamifyError the API's refusal (`FILE_NOT_FOUND`, `NOT_A_DIRECTORY`, `WATCH_NOT_FOUND`,
 *   `INVALID_STATE`, ...), `ConnectionError` when the API is unreachable, `REQUEST_TIMEOUT`.
 */
export async function openWatchSocket(api: ApiClient, route: BoundRoute, query: Query, onEvents: (events: WatchWireEvent[]) => void): Promise<WatchSocket> {
  const WS = await loadWebSocket();
  const timeoutMs = api.config.requestTimeoutMs;
  const { path } = route;
  const ws = new WS(route.wsUrl(query), { headers: api.authHeaders(), ...(timeoutMs > 0 ? { handshakeTimeout: timeoutMs } : {}) });
  let settle!: (end: WatchSocketEnd) => void;
  const ended = new Promise<WatchSocketEnd>((resolve) => {
    let done = false;
    settle = (end) => {
      if (!done) resolve(end);
      done = true;
    };
  });
  return new Promise<WatchSocket>((resolve, reject) => {
    let watching = false;
    let refusal: RamifyError | undefined;
    ws.on('message', (data: WebSocket.RawData, isBinary: boolean) => {
      if (isBinary) return;
      let frame: WatchControl;
      try {
        frame = JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data as Buffer[]).toString('utf8')) as WatchControl;
      } catch {
        return;
      }
      if (frame.type === 'watching' && !watching) {
        watching = true;
        resolve({
          watchId: frame.watchId, path: frame.path, recursive: frame.recursive, from: frame.from, ended,
          sendStop: () => ws.readyState === WS.OPEN && ws.send(JSON.stringify({ type: 'stop' } satisfies WatchControl)),
          close: () => (ws.readyState === WS.OPEN || ws.readyState === WS.CONNECTING) && ws.close(1000),
        });
      } else if (frame.type === 'events' && watching) onEvents(frame.events);
      else if (frame.type === 'end') settle(frame.message === undefined ? { kind: 'end', reason: frame.reason } : { kind: 'end', reason: frame.reason, message: frame.message });
      else if (frame.type === 'error' && !watching) refusal = errorFromCode(frame.code, frame.message);
    });
    ws.on('unexpected-response', (req, res) => rejectRefusedUpgrade(api, path, req, res, reject));
    ws.on('error', (err: Error) => {
      if (watching) return;
      if (/timeout/i.test(err.message)) reject(errorFromCode('REQUEST_TIMEOUT', `WebSocket ${path} handshake timed out after ${timeoutMs} ms (API ${api.config.apiUrl})`));
      else reject(api.connectionError(Object.assign(new Error(err.message), { cause: err })));
    });
    ws.on('close', (code: number, reason: Buffer) => {
      const why = `closed with ${code}${reason.length ? ` ${reason.toString('utf8')}` : ''}`;
      if (!watching) reject(refusal ?? api.connectionError(new Error(`watch stream ${path} ${why} before it started`)));
      settle({ kind: 'dropped', reason: why });
    });
  });
}
