/**
 * The SDK's only HTTP client: global `fetch` with the bearer key, a per-request deadline (until the
 * response headers arrive, so streamed bodies are never cut), and error mapping to {@link RamifyError}s.
 * Every call names its route in contracts' route table (`ROUTES.pauseSandbox`) with the path's
 * parameters: method and path come from the table, never typed here.
 */
import { routePath } from '@ramify/contracts/client';
import type { RouteDef, RouteParams } from '@ramify/contracts';
import type { ConnectionConfig } from './connection.js';
import { AuthenticationError, ConnectionError, PermissionDeniedError, RamifyError, TimeoutError, errorFromResponse } from './errors.js';

/** Query string values; `undefined` entries are left out. */
export type Query = Record<string, string | number | undefined>;

/** Options of one API request. */
export interface ApiRequestOptions {
  query?: Query;
  /** JSON body (sets `content-type: application/json`). */
  json?: unknown;
  /** Raw body; blobs and streams are sent as they are read (streams with `duplex: 'half'`), never buffered whole. */
  body?: string | Uint8Array | Blob | ReadableStream<Uint8Array>;
  contentType?: string;
  /** Deadline until response headers, ms; default the connection's `requestTimeoutMs`; 0 = none. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** A route with its path parameters bound ({@link ApiClient.at}). */
export interface BoundRoute {
  /** Its concrete path (`/v1/sandboxes/sbx_1/commands/stream`), for messages. */
  readonly path: string;
  /** {@link ApiClient.request}: the 2xx response, body unread. */
  request(opts?: ApiRequestOptions): Promise<Response>;
  /** The request, its JSON answer parsed. */
  json<T>(opts?: ApiRequestOptions): Promise<T>;
  /** The request, for answers without a body (204). */
  empty(opts?: ApiRequestOptions): Promise<void>;
  /** Its absolute URL with `query`. */
  url(query?: Query): string;
  /** Its WebSocket URL with `query`. */
  wsUrl(query?: Query): string;
}

/** `fetch`'s init plus the streaming-upload flag Node's fetch requires for stream bodies. */
type StreamingRequestInit = RequestInit & { duplex?: 'half' };

/** Thin client over `/v1`. One per connection; holds no other state (the key stays inside {@link ConnectionConfig}). */
export class ApiClient {
  constructor(readonly config: ConnectionConfig) {}

  /** Absolute URL of `route` with `params` in its path and `query`. */
  url<R extends RouteDef>(route: R, params: RouteParams<R>, query?: Query): string {
    const url = new URL(`${this.config.apiUrl}${routePath(route, params)}`);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    return url.toString();
  }

  /** WebSocket URL of `route` (`http` → `ws`, `https` → `wss`). */
  wsUrl<R extends RouteDef>(route: R, params: RouteParams<R>, query?: Query): string {
    return this.url(route, params, query).replace(/^http/, 'ws');
  }

  /** Headers every request and WebSocket carries: the connection's extra headers and the bearer key when one is configured. */
  authHeaders(): Record<string, string> {
    const key = this.config.revealApiKey();
    return key ? { ...this.config.headers, authorization: `Bearer ${key}` } : { ...this.config.headers };
  }

  /**
   * Send a request and return the 2xx response (body unread). Non-2xx responses throw the error the
   * body names; network failures throw {@link ConnectionError}; the deadline throws {@link TimeoutError}.
   */
  async request<R extends RouteDef>(route: R, params: RouteParams<R>, opts: ApiRequestOptions = {}): Promise<Response> {
    const { method } = route;
    const what = `${method} ${routePath(route, params)}`;
    const timeoutMs = opts.timeoutMs ?? this.config.requestTimeoutMs;
    const deadline = new AbortController();
    const timer = timeoutMs > 0 ? setTimeout(() => deadline.abort(), timeoutMs) : undefined;
    const signal = opts.signal ? AbortSignal.any([opts.signal, deadline.signal]) : deadline.signal;
    const headers: Record<string, string> = { ...this.authHeaders() };
    const init: StreamingRequestInit = { method, headers, signal };
    let cutUpload: ((reason: Error) => void) | undefined;
    if (opts.json !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(opts.json);
    } else if (opts.body !== undefined) {
      headers['content-type'] = opts.contentType ?? 'application/octet-stream';
      init.body = opts.body as BodyInit; // Uint8Array<ArrayBufferLike> is a valid body; TS 5.9's lib is stricter than fetch
      if (opts.body instanceof ReadableStream) {
        const upload = cuttable(opts.body);
        init.body = upload.stream;
        cutUpload = upload.cut;
        init.duplex = 'half';
      }
      // fetch tees the body to be able to follow a redirect unless redirects are errors, and the tee's
      // unread branch keeps every chunk: a streamed upload would be held whole (nodejs/undici#4058).
      // The API never redirects, and a stream body could not be replayed across a redirect anyway.
      init.redirect = 'error';
    }
    let res: Response;
    try {
      res = await fetch(this.url(route, params, opts.query), init);
    } catch (err) {
      if (deadline.signal.aborted) {
        throw new TimeoutError('REQUEST_TIMEOUT', `${what} timed out after ${timeoutMs} ms (API ${this.config.apiUrl})`);
      }
      if (opts.signal?.aborted) throw opts.signal.reason instanceof Error ? opts.signal.reason : err;
      throw this.connectionError(err);
    } finally {
      clearTimeout(timer);
    }
    if (res.ok) return res;
    // Refused before the upload ended: once the answer is read, stop sending, so its connection is
    // dropped, not reused with the rest of the body still queued on it (undici would send the next
    // request behind it).
    const text = await res.text().catch(() => '');
    cutUpload?.(new Error(`${what} was answered ${res.status} before its body was sent`));
    throw this.withAuthHint(errorFromResponse(res.status, text, what));
  }

  /**
   * `route` with `params` bound, to call it: `api.at(ROUTES.pauseSandbox, { id }).json<SandboxInfo>()`
   * (the route's parameters are checked by type here, the answer's type named at the call).
   */
  at<R extends RouteDef>(route: R, params: RouteParams<R>): BoundRoute {
    return {
      path: routePath(route, params),
      request: (opts) => this.request(route, params, opts),
      json: async <T>(opts?: ApiRequestOptions) => (await (await this.request(route, params, opts)).json()) as T,
      empty: async (opts?: ApiRequestOptions) => {
        const res = await this.request(route, params, opts);
        await res.body?.cancel();
      },
      url: (query) => this.url(route, params, query),
      wsUrl: (query) => this.wsUrl(route, params, query),
    };
  }

  /** A {@link ConnectionError} naming the API URL and the low-level cause. */
  connectionError(err: unknown): ConnectionError {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const reason = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
    return new ConnectionError(
      `cannot reach the Ramify API at ${this.config.apiUrl} (${reason}); is \`ramify serve\` running and RAMIFY_API_URL right?`,
      { apiUrl: this.config.apiUrl },
    );
  }

  /** Add "no key configured" to authentication errors when that is the likely cause. */
  withAuthHint(err: RamifyError): RamifyError {
    if (err instanceof AuthenticationError && !this.config.hasApiKey) {
      const message = `${err.message} (no API key configured: set RAMIFY_API_KEY, pass apiKey, or make /var/lib/ramify/api-key readable)`;
      return err instanceof PermissionDeniedError ? new PermissionDeniedError(message, err.details) : new AuthenticationError(err.code as 'UNAUTHORIZED' | 'FORBIDDEN', message, err.details);
    }
    return err;
  }
}

/**
 * `source` passed through a stream that {@link cut} can fail: the request's body errors, so fetch
 * drops the connection, and `source` is cancelled.
 */
function cuttable(source: ReadableStream<Uint8Array>): { stream: ReadableStream<Uint8Array>; cut: (reason: Error) => void } {
  let controller!: TransformStreamDefaultController<Uint8Array>;
  const pipe = new TransformStream<Uint8Array, Uint8Array>({ start: (c) => void (controller = c) });
  source.pipeTo(pipe.writable).catch(() => undefined);
  return { stream: pipe.readable, cut: (reason) => controller.error(reason) };
}
