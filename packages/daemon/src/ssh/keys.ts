/**
 * SSH key material at the gateway's edge, read with ssh2's key parser: the host key (made once, ed25519,
 * kept in the data directory) and public keys people register (`ramify ssh-key add`).
 */
import { createHash } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RamifyError } from '@ramify/contracts';
import type { ParsedSshPublicKey } from '@ramify/core';
import ssh2 from 'ssh2';

const { parseKey, generateKeyPairSync } = ssh2.utils;

/** File name of the host key in the data directory (OpenSSH private key format, mode 0600). */
export const HOST_KEY_FILE = 'ssh_host_ed25519_key';

/** OpenSSH's fingerprint of a public key blob: `SHA256:` + unpadded base64 of its sha256. */
export function fingerprintOf(blob: Uint8Array): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/**
 * A new ed25519 key pair in OpenSSH format that ssh2's own parser reads back. ssh2's `generateKeyPairSync`
 * strips every leading zero byte of the public key, so about one key in 256 comes out malformed (a
 * 31-byte public key) and `parseKey` rejects it; such a pair is thrown away and another made.
 * @returns `{ private, public }`, the private key (PEM-armoured OpenSSH) and the `.pub` line.
 */
export function generateEd25519Key(comment: string): { private: string; public: string } {
  for (;;) {
    const pair = generateKeyPairSync('ed25519', { comment });
    const priv = parseKey(pair.private);
    const pub = parseKey(pair.public);
    if (!(priv instanceof Error) && !(pub instanceof Error) && pub.getPublicSSH().length === 51) return pair;
  }
}

/**
 * The gateway's host key: read from `<dataDir>/ssh_host_ed25519_key`, or made (ed25519) and written there
 * first (0600, through a temporary file and a rename, so a crash never leaves half a key). Clients pin
 * it, so it is made once and kept.
 * @returns the private key (OpenSSH format) and the public key's fingerprint.
 * @throws RamifyError `INTERNAL` when the file exists but is not a private key.
 */
export async function loadHostKey(dataDir: string): Promise<{ privateKey: string; fingerprint: string }> {
  const path = join(dataDir, HOST_KEY_FILE);
  let privateKey = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw err;
  });
  if (privateKey === null) {
    privateKey = generateEd25519Key('ramify-ssh-gateway').private;
    const tmp = `${path}.${process.pid}.tmp`;
    await writeFile(tmp, privateKey, { mode: 0o600, flush: true });
    await rename(tmp, path);
  }
  const parsed = parseKey(privateKey);
  if (parsed instanceof Error || !parsed.isPrivateKey()) throw new RamifyError('INTERNAL', `${path} is not an SSH private key; move it away and a new host key is made`);
  return { privateKey, fingerprint: fingerprintOf(parsed.getPublicSSH()) };
}

/**
 * Read one OpenSSH public key line (`ssh-ed25519 AAAA... comment`, as in a `*.pub` file; blank lines
 * and surrounding space ignored).
 * @throws RamifyError `SSH_KEY_INVALID` for anything else: a private key, several keys, bad base64, a
 *   blob that does not match its type, an unsupported type.
 */
export function parseSshPublicKey(text: string): ParsedSshPublicKey {
  const lines = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l.length > 0);
  const invalid = (why: string): RamifyError => new RamifyError('SSH_KEY_INVALID', `not an SSH public key: ${why} (give one line of a .pub file, e.g. 'ssh-ed25519 AAAA... you@host')`);
  if (lines.length === 0) throw invalid('it is empty');
  if (/PRIVATE KEY/.test(text)) throw invalid('this is a private key; give its .pub file');
  if (lines.length > 1) throw invalid(`it has ${lines.length} lines; give one key at a time`);
  const [type, data, ...comment] = lines[0]!.split(/\s+/);
  if (!type || !data) throw invalid("expected '<type> <base64> [comment]'");
  const parsed = parseKey(lines[0]!);
  if (parsed instanceof Error) throw invalid(parsed.message);
  if (parsed.isPrivateKey()) throw invalid('this is a private key; give its .pub file');
  const blob = parsed.getPublicSSH();
  if (parsed.type !== type || blob.toString('base64') !== data) throw invalid(`the key data does not match its type '${type}'`);
  return { type: parsed.type, fingerprint: fingerprintOf(blob), publicKey: `${parsed.type} ${blob.toString('base64')}`, comment: comment.join(' ') };
}
