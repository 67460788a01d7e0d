/**
 * Daemon configuration: where its data lives and where it listens. The daemon is the composition root,
 * so it (and only it) reads the environment.
 */
import { DEFAULT_API_PORT, DEFAULT_MAX_OUTPUT_BYTES, MAX_OUTPUT_BYTES_CEILING, RamifyError } from '@ramify/contracts';

/** Default data directory (override with the `dataDir` option or `RAMIFY_HOME`). */
export const DEFAULT_DATA_DIR = '/var/lib/ramify';
export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = DEFAULT_API_PORT;
/** Default port of the ingress listener (port URLs) and of the SSH gateway; both listen on {@link DEFAULT_HOST} by default. */
export const DEFAULT_INGRESS_PORT = 7424;
export const DEFAULT_SSH_PORT = 2222;

/** `option` if given, else `RAMIFY_HOME`, else {@link DEFAULT_DATA_DIR}. */
export function resolveDataDir(option?: string, env: NodeJS.ProcessEnv = process.env): string {
  return option ?? (env.RAMIFY_HOME && env.RAMIFY_HOME !== '' ? env.RAMIFY_HOME : DEFAULT_DATA_DIR);
}

/** Default shared cache of template root filesystem layers (content-addressed, safe to share between daemons). */
export const DEFAULT_CACHE_DIR = '/var/cache/ramify';

/** The template layer cache: the option, else `RAMIFY_CACHE_DIR`, else {@link DEFAULT_CACHE_DIR}. */
export function resolveCacheDir(option?: string, env: NodeJS.ProcessEnv = process.env): string {
  return option ?? (env.RAMIFY_CACHE_DIR && env.RAMIFY_CACHE_DIR !== '' ? env.RAMIFY_CACHE_DIR : DEFAULT_CACHE_DIR);
}

/** Name of the file in the data directory holding the first API key (mode 0600), for the CLI on this host. */
export const API_KEY_FILE = 'api-key';

/**
 * The per-stream limit of command results, bytes: `option` if given, else {@link DEFAULT_MAX_OUTPUT_BYTES}
 * (32 MiB). Results hold the head of each stream and say when they were cut; streams are never cut.
 * @throws RamifyError VALIDATION_FAILED when `option` is not an integer from 0 to `MAX_OUTPUT_BYTES_CEILING` (40 MiB).
 */
export function resolveMaxOutputBytes(option?: number): number {
  if (option === undefined) return DEFAULT_MAX_OUTPUT_BYTES;
  if (!Number.isInteger(option) || option < 0 || option > MAX_OUTPUT_BYTES_CEILING) {
    throw new RamifyError('VALIDATION_FAILED', `maxOutputBytes must be an integer from 0 to ${MAX_OUTPUT_BYTES_CEILING} (40 MiB: a result holds both streams in one JSON body), got ${option}`);
  }
  return option;
}

/**
 * Whether webhooks may reach loopback, private, link-local and this host's own addresses (`ramify serve
 * --webhook-allow-private`): `option` if given, else `RAMIFY_WEBHOOK_ALLOW_PRIVATE` (1/true/yes/on or
 * 0/false/no/off), else false (public addresses only).
 * @throws RamifyError VALIDATION_FAILED when the variable is not a boolean.
 */
export function resolveWebhookAllowPrivate(option?: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  if (option !== undefined) return option;
  const value = env.RAMIFY_WEBHOOK_ALLOW_PRIVATE ?? '';
  if (value === '' || /^(0|false|no|off)$/i.test(value)) return false;
  if (/^(1|true|yes|on)$/i.test(value)) return true;
  throw new RamifyError('VALIDATION_FAILED', `RAMIFY_WEBHOOK_ALLOW_PRIVATE='${value}' is not a boolean (1/true or 0/false)`);
}
