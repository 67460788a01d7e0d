/**
 * First start: when the store holds no live admin key of the default team (the operator's key: it makes
 * teams and keys, see docs/design/TEAMS.md), make one, print it once, and write it to `<dataDir>/api-key`
 * (mode 0600) so the CLI on the same host can find it. Later starts do nothing.
 */
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createApiKey, DEFAULT_TEAM_ID, isLiveKey, type Clock, type Store } from '@ramify/core';
import { API_KEY_FILE } from './config.js';

/**
 * @returns the new key when one was made (first start), else null.
 */
export async function ensureApiKey(options: { store: Store; clock: Clock; dataDir: string; print: (line: string) => void }): Promise<string | null> {
  const keys = await options.store.listApiKeys({ teamId: DEFAULT_TEAM_ID });
  if (keys.some((k) => k.role === 'admin' && isLiveKey(k, options.clock.now()))) return null;
  const { key } = await createApiKey(options.store, options.clock, 'default', { teamId: DEFAULT_TEAM_ID, role: 'admin' });
  const path = join(options.dataDir, API_KEY_FILE);
  await writeFile(path, `${key}\n`, { mode: 0o600 });
  await chmod(path, 0o600);
  options.print(`Ramify API key (shown once; also saved to ${path}): ${key}`);
  return key;
}
