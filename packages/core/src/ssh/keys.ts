/**
 * Use-cases: SSH public keys registered through the API. A key belongs to the team of the API key that
 * registered it and opens that team's sandboxes only (see docs/design/SSH.md, docs/design/TEAMS.md and
 * {@link sshKeyOpens}); another team's key is not found. The key's text is parsed at the edge (the
 * daemon's SSH module, with ssh2's parser); core stores what it is given.
 */
import { RamifyError, notFound, type SshKeyInfo } from '@ramify/contracts';
import type { Core } from '../context.js';
import { newSshKeyId } from '../ids.js';
import type { SshKeyRecord } from '../ports/store.js';
import { DEFAULT_TEAM_ID } from '../access/actor.js';

/** A public key as the edge parsed it. */
export interface ParsedSshPublicKey {
  /** Key algorithm, e.g. `ssh-ed25519`. */
  type: string;
  /** `SHA256:` + unpadded base64 of the blob's sha256. */
  fingerprint: string;
  /** `type base64`. */
  publicKey: string;
  /** The comment after the key ('' when none). */
  comment: string;
}

/**
 * Register `key` for `ownerApiKeyId`'s team `teamId` (default the default team); stored before it
 * resolves. The name defaults to the key's comment, else its fingerprint.
 * @throws RamifyError `SSH_KEY_EXISTS` when the team has the same key registered already.
 */
export async function addSshKey(
  core: Pick<Core, 'store' | 'clock'>,
  input: { key: ParsedSshPublicKey; name?: string; ownerApiKeyId: string | null; teamId?: string },
): Promise<SshKeyRecord> {
  const { key } = input;
  const record: SshKeyRecord = {
    id: newSshKeyId(),
    teamId: input.teamId ?? DEFAULT_TEAM_ID,
    ownerApiKeyId: input.ownerApiKeyId,
    name: input.name ?? (key.comment.slice(0, 128) || key.fingerprint),
    type: key.type,
    fingerprint: key.fingerprint,
    publicKey: key.publicKey,
    createdAt: core.clock.now(),
  };
  await core.store.insertSshKey(record);
  return record;
}

/** The team's registered keys (default the default team's), oldest first. */
export function listSshKeys(core: Pick<Core, 'store'>, teamId: string = DEFAULT_TEAM_ID): Promise<SshKeyRecord[]> {
  return core.store.listSshKeys(teamId);
}

/**
 * Unregister one of the team's keys: from then on it opens nothing (connections already open stay open).
 * @throws RamifyError `SSH_KEY_NOT_FOUND` (also another team's).
 */
export async function removeSshKey(core: Pick<Core, 'store'>, id: string, teamId: string = DEFAULT_TEAM_ID): Promise<void> {
  if (!(await core.store.deleteSshKey(id, teamId))) throw notFound('SSH_KEY_NOT_FOUND', 'SSH key', id, { id });
}

/** The API shape of a key. */
export function toSshKeyInfo(r: SshKeyRecord): SshKeyInfo {
  return { id: r.id, name: r.name, type: r.type, fingerprint: r.fingerprint, publicKey: r.publicKey, ownerApiKeyId: r.ownerApiKeyId, team: r.teamId, createdAt: new Date(r.createdAt).toISOString() };
}
