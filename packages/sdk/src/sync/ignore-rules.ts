/**
 * What a sync leaves alone: `.git`, `node_modules` and `.ramify` (the sync's own state) anywhere, the
 * patterns of `.ramifyignore` in the local directory's top (gitignore syntax), and the `ignore` globs
 * given (same syntax). An ignored path is neither copied nor deleted on either side; an ignored
 * directory is not entered.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { STATE_DIR } from './state.js';

/** Always ignored, at any depth (the last: a pull's temporary files, see `local.ts`). */
export const DEFAULT_IGNORES: readonly string[] = ['.git', 'node_modules', STATE_DIR, '.*.ramify-sync-*'];

/** The file of ignore patterns read from the local directory's top. */
export const IGNORE_FILE = '.ramifyignore';

/** `(rel, isDir) => true` when the sync carries `rel` (relative, `/`-separated). */
export type KeepPath = (rel: string, isDir: boolean) => boolean;

/** Build the rules from the defaults, `localDir/.ramifyignore` (if present) and `extra` globs. */
export async function loadIgnoreRules(localDir: string, extra: readonly string[] = []): Promise<KeepPath> {
  const fromFile = await readFile(join(localDir, IGNORE_FILE), 'utf8').catch(() => '');
  const { default: ignore } = await import('ignore'); // loaded on first use: importing the SDK does not load the sync engine's dependencies
  const rules = ignore().add([...DEFAULT_IGNORES]).add(fromFile).add([...extra]);
  return (rel, isDir) => rel !== '' && !rules.ignores(isDir ? `${rel}/` : rel);
}
