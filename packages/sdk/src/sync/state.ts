/**
 * The sync state: for each path, what both sides had when last in sync ({@link SyncedEntry}). Kept in
 * the local directory, `.ramify/sync/<sandboxId>-<hash of the remote dir>.json` (the sync never carries
 * `.ramify/`), written atomically after every pass, so a restarted `ramify sandbox sync` knows what
 * changed on which side since and neither re-copies everything nor mistakes an edit for a conflict.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { RamifyError } from '../errors.js';
import type { SyncedEntry } from './reconcile.js';

/** The state file's format version; another version is refused, not guessed at. */
export const SYNC_STATE_VERSION = 1;

/** Directory (under the local root) of the sync's own files; never synced. */
export const STATE_DIR = '.ramify';

interface StateFile {
  version: number;
  sandboxId: string;
  remoteDir: string;
  entries: Record<string, SyncedEntry>;
}

/** Where the state of syncing `localDir` with `sandboxId:remoteDir` lives. */
export function statePath(localDir: string, sandboxId: string, remoteDir: string): string {
  const key = createHash('sha256').update(remoteDir).digest('hex').slice(0, 16);
  return join(localDir, STATE_DIR, 'sync', `${sandboxId}-${key}.json`);
}

/**
 * Read the state (empty when there is none yet).
 * @throws RamifyError BAD_REQUEST when the file is of another format version or unreadable JSON.
 */
export async function loadState(path: string): Promise<Map<string, SyncedEntry>> {
  const text = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (text === undefined) return new Map();
  let parsed: StateFile;
  try {
    parsed = JSON.parse(text) as StateFile;
  } catch {
    throw new RamifyError('BAD_REQUEST', `sync state ${path} is not JSON; remove it to start over (the next sync compares contents)`);
  }
  if (parsed.version !== SYNC_STATE_VERSION) throw new RamifyError('BAD_REQUEST', `sync state ${path} has format version ${String(parsed.version)}, this client reads ${SYNC_STATE_VERSION}`);
  return new Map(Object.entries(parsed.entries));
}

/** Write the state atomically (a temporary file renamed over it). */
export async function saveState(path: string, meta: { sandboxId: string; remoteDir: string }, entries: Map<string, SyncedEntry>): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const body: StateFile = { version: SYNC_STATE_VERSION, ...meta, entries: Object.fromEntries([...entries].sort(([a], [b]) => (a < b ? -1 : 1))) };
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(body));
  await rename(tmp, path);
}
