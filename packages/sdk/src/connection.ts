/**
 * Where the API is and how to authenticate. Resolved once per handle from explicit options, then
 * environment variables, then the daemon's key file.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_API_PORT } from '@ramify/contracts/client';

/** Connection options accepted by every SDK entry point (the options object's last members). */
export interface ConnectionOpts {
  /** API base URL, e.g. `http://127.0.0.1:7423`. Default: env `RAMIFY_API_URL`, else `http://127.0.0.1:7423`. */
  apiUrl?: string;
  /**
   * Bearer key (`rmf_...`). Default: env `RAMIFY_API_KEY`, else the first readable of
   * `$RAMIFY_HOME/api-key` and `/var/lib/ramify/api-key`, else none (only `/v1/health` works then).
   */
  apiKey?: string;
  /** Per-request deadline for control-plane calls, ms (until response headers). Default 60000; 0 = none. */
  requestTimeoutMs?: number;
  /**
   * Extra headers sent on every request and WebSocket of the handle (as E2B's `headers`), e.g. the
   * `x-ramify-mcp-tool` tag the MCP server puts on its calls for the audit log. `authorization` is
   * ignored here: the key is {@link apiKey}.
   */
  headers?: Record<string, string>;
}

/** The plain values a {@link ConnectionConfig} is built from. */
export interface ConnectionSettings {
  /** Without a trailing slash. */
  apiUrl: string;
  apiKey: string | undefined;
  requestTimeoutMs: number;
  /** Extra headers of every request (see {@link ConnectionOpts.headers}); default none. */
  headers?: Record<string, string>;
}

/**
 * Fully resolved {@link ConnectionOpts}, held by every SDK handle. The API key lives in a private
 * field and is read only through {@link revealApiKey}: `console.log`, `util.inspect` (even with
 * `showHidden`/`getters`), `JSON.stringify`, `Object.keys` and spread never contain it, so logging a
 * `Sandbox`, a `CommandHandle`, a paginator or a report cannot leak it.
 */
export class ConnectionConfig {
  /** API base URL, without a trailing slash. */
  readonly apiUrl: string;
  /** Per-request deadline for control-plane calls, ms; 0 = none. */
  readonly requestTimeoutMs: number;
  /** True when a key is configured (safe to log; the key itself is not a property). */
  readonly hasApiKey: boolean;
  /** Extra headers of every request and WebSocket (never `authorization`). */
  readonly headers: Readonly<Record<string, string>>;
  readonly #apiKey: string | undefined;

  constructor(settings: ConnectionSettings) {
    this.apiUrl = settings.apiUrl;
    this.requestTimeoutMs = settings.requestTimeoutMs;
    this.headers = Object.fromEntries(Object.entries(settings.headers ?? {}).filter(([name]) => name.toLowerCase() !== 'authorization'));
    this.hasApiKey = settings.apiKey !== undefined && settings.apiKey !== '';
    this.#apiKey = settings.apiKey;
  }

  /**
   * The bearer key (`rmf_...`), or undefined when none is configured. A method, not a property or
   * getter, so that no inspection or serialisation of an SDK object ever evaluates it.
   */
  revealApiKey(): string | undefined {
    return this.#apiKey;
  }
}

/** Default control-plane request deadline, ms. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
/** Key file written by `ramify serve` for local clients. */
export const SYSTEM_API_KEY_FILE = '/var/lib/ramify/api-key';

/** Source of environment variables and files, for tests; defaults to `process.env` and the real disk. */
export interface ConnectionEnvironment {
  env: Record<string, string | undefined>;
  readFile: (path: string) => string | undefined;
}

const realEnvironment = (): ConnectionEnvironment => ({
  env: process.env,
  readFile: (path) => {
    try { return readFileSync(path, 'utf8'); } catch { return undefined; }
  },
});

/** The key from the files named in {@link ConnectionOpts.apiKey}, if any is readable and non-empty. */
function keyFromFiles(environment: ConnectionEnvironment): string | undefined {
  const home = environment.env.RAMIFY_HOME;
  const candidates = [...(home ? [join(home, 'api-key')] : []), SYSTEM_API_KEY_FILE];
  for (const file of candidates) {
    const key = environment.readFile(file)?.trim();
    if (key) return key;
  }
  return undefined;
}

/** Resolve connection options (explicit > env > key file > defaults) into a {@link ConnectionConfig}. Never throws. */
export function resolveConnection(opts: ConnectionOpts = {}, environment: ConnectionEnvironment = realEnvironment()): ConnectionConfig {
  const rawUrl = opts.apiUrl ?? environment.env.RAMIFY_API_URL ?? `http://127.0.0.1:${DEFAULT_API_PORT}`;
  const apiKey = opts.apiKey ?? (environment.env.RAMIFY_API_KEY || undefined) ?? keyFromFiles(environment);
  return new ConnectionConfig({
    apiUrl: rawUrl.replace(/\/+$/, ''),
    apiKey,
    requestTimeoutMs: opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    ...(opts.headers ? { headers: opts.headers } : {}),
  });
}
