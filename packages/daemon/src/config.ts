/**
 * Daemon configuration: where its data lives and where it listens. The daemon is the composition root,
 * so it (and only it) reads the environment.
 */
import { DEFAULT_API_PORT } from '@ramify/contracts';

/** Default data directory (override with the `dataDir` option or `RAMIFY_HOME`). */
export const DEFAULT_DATA_DIR = '/var/lib/ramify';
export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = DEFAULT_API_PORT;

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
