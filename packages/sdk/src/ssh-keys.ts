/**
 * SSH public keys registered with the daemon's SSH gateway (`ssh -p 2222 <sandboxId>@host`). A key
 * belongs to the team of the API key that registers it and opens that team's sandboxes only. Plain functions taking {@link ConnectionOpts} last, like `listTemplates`.
 * Per-sandbox tokens are `sbx.getSshAccess()`.
 */
import { ROUTES } from '@ramify/contracts/client';
import type { ListSshKeysResponse, SshKeyInfo } from '@ramify/contracts';
import { resolveConnection, type ConnectionOpts } from './connection.js';
import { ApiClient } from './http.js';

const client = (opts: ConnectionOpts = {}): ApiClient => new ApiClient(resolveConnection(opts));

/**
 * Register one OpenSSH public key line (the content of a `.pub` file); `name` defaults to its comment.
 * @throws `SSH_KEY_INVALID` (400) for anything else, a private key included; `SSH_KEY_EXISTS` (409).
 */
export function addSshKey(publicKey: string, opts: ConnectionOpts & { name?: string } = {}): Promise<SshKeyInfo> {
  const { name, ...conn } = opts;
  return client(conn).at(ROUTES.addSshKey, {}).json({ json: { publicKey, ...(name !== undefined ? { name } : {}) } });
}

/** Registered keys, oldest first. */
export async function listSshKeys(opts?: ConnectionOpts): Promise<SshKeyInfo[]> {
  return (await client(opts).at(ROUTES.listSshKeys, {}).json<ListSshKeysResponse>()).keys;
}

/** Unregister a key by id (`sshk_...`): it opens nothing from then on. @throws `SSH_KEY_NOT_FOUND`. */
export function removeSshKey(keyId: string, opts?: ConnectionOpts): Promise<void> {
  return client(opts).at(ROUTES.removeSshKey, { keyId }).empty();
}
