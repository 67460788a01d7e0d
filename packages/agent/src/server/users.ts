/** Looking up sandbox users in /etc/passwd (the agent runs as root and drops to them per command). */
import { readFile } from 'node:fs/promises';
import { RamifyError } from '@ramify/contracts';

export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  home: string;
  shell: string;
}

/** Parse /etc/passwd content; malformed lines are skipped. */
export function parsePasswd(text: string): PasswdEntry[] {
  const out: PasswdEntry[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f.length < 7 || line.startsWith('#')) continue;
    const uid = Number(f[2]);
    const gid = Number(f[3]);
    if (!Number.isInteger(uid) || !Number.isInteger(gid)) continue;
    out.push({ name: f[0], uid, gid, home: f[5], shell: f[6] });
  }
  return out;
}

/**
 * Find a user by name (or numeric uid as a string).
 * @throws RamifyError BAD_REQUEST when no such user exists.
 */
export async function lookupUser(user: string, passwdPath = '/etc/passwd'): Promise<PasswdEntry> {
  let text = '';
  try {
    text = await readFile(passwdPath, 'utf8');
  } catch {
    // No passwd file: only numeric ids can match below.
  }
  const entries = parsePasswd(text);
  const found = entries.find((e) => e.name === user) ?? entries.find((e) => String(e.uid) === user);
  if (found) return found;
  throw new RamifyError('BAD_REQUEST', `user '${user}' not found in ${passwdPath}`, { user });
}
