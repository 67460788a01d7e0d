/**
 * Use-case: short-lived SSH access to one sandbox. A token is `rst_` + 32 random bytes as base64url (43
 * characters); only its sha256 is stored, with the sandbox and the expiry, before it is handed out. It
 * travels in the SSH user name, `<sandboxId>+<token>` (or as the password), so plain `ssh` takes it
 * without a prompt; {@link sshTokenOpens} checks it.
 */
import { createHash } from 'node:crypto';
import { DEFAULT_SSH_TOKEN_TTL_MS, RamifyError, SSH_TOKEN_USER_SEPARATOR, type SshAccessInfo } from '@ramify/contracts';
import type { Core } from '../context.js';
import { loadSandbox } from '../lifecycle/records.js';
import { assertNotKilled } from '../lifecycle/state-machine.js';

/** Where SSH clients reach this daemon's gateway (`CoreOptions.ssh`). */
export interface SshEndpoint {
  /** Host name or address clients dial. */
  host: string;
  port: number;
}

export const SSH_TOKEN_PREFIX = 'rst_';
const TOKEN_FORMAT = /^rst_[A-Za-z0-9_-]{43}$/;

/** True when `value` has the token format (says nothing about whose it is). */
export function isWellFormedSshToken(value: string): boolean {
  return TOKEN_FORMAT.test(value);
}

/** sha256 (hex) of a token, as stored. */
export function hashSshToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** The user name that carries `token`: `<sandboxId>+<token>`. */
export function sshTokenUser(sandboxId: string, token: string): string {
  return `${sandboxId}${SSH_TOKEN_USER_SEPARATOR}${token}`;
}

/** A ready OpenSSH command line for `user` at `endpoint` (no `-p` for port 22). */
export function sshCommand(endpoint: SshEndpoint, user: string): string {
  return `ssh ${endpoint.port === 22 ? '' : `-p ${endpoint.port} `}${user}@${endpoint.host}`;
}

/**
 * Make a token opening `sandboxId` over SSH for `ttlMs` (default 1 h), stored (hashed) before it
 * resolves; expired tokens are dropped in the same write. The token is in the answer only.
 * @throws RamifyError `SSH_UNAVAILABLE` (no gateway), `SANDBOX_NOT_FOUND` (also killed).
 */
export async function grantSshAccess(
  core: Pick<Core, 'store' | 'clock' | 'entropy' | 'options'>,
  sandboxId: string,
  input: { ttlMs?: number; ownerApiKeyId: string | null },
): Promise<SshAccessInfo> {
  const endpoint = core.options.ssh;
  if (!endpoint) throw new RamifyError('SSH_UNAVAILABLE', 'this daemon serves no SSH gateway (start it with `ramify serve --ssh-listen ADDR:PORT`)');
  const record = await loadSandbox(core, sandboxId);
  assertNotKilled(sandboxId, record.state);
  const token = `${SSH_TOKEN_PREFIX}${Buffer.from(core.entropy(32)).toString('base64url')}`;
  const now = core.clock.now();
  const expiresAt = now + (input.ttlMs ?? DEFAULT_SSH_TOKEN_TTL_MS);
  await core.store.insertSshToken({ hash: hashSshToken(token), sandboxId: record.id, ownerApiKeyId: input.ownerApiKeyId, createdAt: now, expiresAt });
  const user = sshTokenUser(record.id, token);
  return { host: endpoint.host, port: endpoint.port, user, token, command: sshCommand(endpoint, user), expiresAt: new Date(expiresAt).toISOString() };
}

/**
 * Revoke `token` at once (its row deleted; a connection it opened stays open). The API role's SSH relay
 * revokes the token it minted for its connection to a host as soon as that connection is authenticated.
 * @returns whether a row was deleted.
 */
export function revokeSshToken(core: Pick<Core, 'store'>, token: string): Promise<boolean> {
  return core.store.deleteSshToken(hashSshToken(token));
}
