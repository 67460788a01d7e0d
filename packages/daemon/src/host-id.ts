/**
 * This daemon's host id: a stable name for the machine (or the runtime state) a daemon drives, recorded on
 * the sandboxes and snapshots it holds (`SandboxRecord.hostId`) and keying its network slots. Generated
 * once and kept in the data directory (`<dataDir>/host-id`, mode 0600); `ramify serve --host-id` sets it
 * the first time. A data directory keeps its id: a different `--host-id` later is refused, since the
 * sandboxes recorded under the old id would look like another host's.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RamifyError } from '@ramify/contracts';

/** The file in the data directory holding the host id. */
export const HOST_ID_FILE = 'host-id';

/** A host id: 1-63 of lowercase letters, digits and `-`, starting with a letter or digit (a DNS label, so it can name hosts later). */
const HOST_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;

/**
 * Check `hostId`'s shape.
 * @throws RamifyError `VALIDATION_FAILED` naming the rule.
 */
export function validateHostId(hostId: string): string {
  if (!HOST_ID.test(hostId)) {
    throw new RamifyError('VALIDATION_FAILED', `host id '${hostId}' is invalid: use 1-63 lowercase letters, digits and '-', starting with a letter or digit (e.g. 'host-a')`, { hostId });
  }
  return hostId;
}

/** A fresh host id: `host-` and 12 random lowercase hex digits (48 bits). */
export function newHostId(): string {
  return `host-${randomBytes(6).toString('hex')}`;
}

/**
 * The data directory's host id: the stored one; else `requested` (or a fresh one), stored now. The
 * directory must exist.
 * @throws RamifyError `VALIDATION_FAILED` for a malformed `requested` or stored id, or a `requested` id
 *   that differs from the stored one (the message says which is stored and how to keep it).
 */
export async function resolveHostId(dataDir: string, requested?: string): Promise<string> {
  if (requested !== undefined) validateHostId(requested);
  const file = join(dataDir, HOST_ID_FILE);
  const stored = await readFile(file, 'utf8').then((text) => text.trim(), (err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw err;
  });
  if (stored !== null) {
    validateHostId(stored);
    if (requested !== undefined && requested !== stored) {
      throw new RamifyError('VALIDATION_FAILED', `the data directory ${dataDir} belongs to host '${stored}' (${file}); --host-id '${requested}' would disown its sandboxes and snapshots: drop --host-id, pass '${stored}', or use another data directory`, { hostId: requested, storedHostId: stored });
    }
    return stored;
  }
  const hostId = requested ?? newHostId();
  // Written whole or not at all: a crash never leaves a half-written id.
  const partial = `${file}.${process.pid}.tmp`;
  await writeFile(partial, `${hostId}\n`, { mode: 0o600 });
  await rename(partial, file);
  return hostId;
}
