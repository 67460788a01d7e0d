/**
 * `ws`, loaded when a client opens its first WebSocket (a command or PTY stream, a watch, the event
 * stream). Importing it (with `http`, `https`, `tls` and `zlib` behind it) is a good part of an SDK
 * import, which most callers (a `ramify sandbox list`) never need.
 */
import type WebSocket from 'ws';

let loading: Promise<typeof WebSocket> | undefined;

/** The `ws` WebSocket class, imported once. */
export function loadWebSocket(): Promise<typeof WebSocket> {
  loading ??= import('ws').then((m) => m.default);
  return loading;
}
