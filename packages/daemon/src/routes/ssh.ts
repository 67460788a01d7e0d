/**
 * SSH gateway routes: public keys registered for SSH (each its registering key's team's), and
 * short-lived per-sandbox SSH access tokens with a ready `ssh` command. The gateway itself listens on its
 * own port (`ramify serve --ssh-listen`).
 */
import { AddSshKeyRequest, ListSshKeysResponse, SshAccessInfo, SshAccessRequest, SshKeyInfo, SshKeyParams } from '@ramify/contracts';
import { addSshKey, grantSshAccess, listSshKeys, removeSshKey, toSshKeyInfo } from '@ramify/core';
import { IdParams, route, type RouteSpec } from '../http/route.js';
import { parseSshPublicKey } from '../ssh/keys.js';

export const sshRoutes: RouteSpec[] = [
  route({
    operation: 'addSshKey', status: 201, body: AddSshKeyRequest, response: SshKeyInfo,
    summary: "Register an OpenSSH public key (one line of a .pub file); it opens its owner's sandboxes over SSH, the sandbox id as user name",
    description: "The key belongs to the registering API key's team and opens that team's sandboxes only. 400 SSH_KEY_INVALID for anything but one public key line, 409 SSH_KEY_EXISTS for a key the team registered already (another team may register the same key).",
    handler: async ({ core, body, actor }) =>
      toSshKeyInfo(await addSshKey(core, { key: parseSshPublicKey(body.publicKey), ...(body.name !== undefined ? { name: body.name } : {}), ownerApiKeyId: actor.keyId, teamId: actor.teamId })),
  }),
  route({
    operation: 'listSshKeys', summary: "The team's registered SSH public keys, oldest first", response: ListSshKeysResponse,
    handler: async ({ core, actor }) => ({ keys: (await listSshKeys(core, actor.teamId)).map(toSshKeyInfo) }),
  }),
  route({
    operation: 'removeSshKey', status: 204, params: SshKeyParams,
    summary: 'Unregister an SSH public key: it opens nothing from then on (connections already open stay)',
    handler: async ({ core, params, actor }) => removeSshKey(core, params.keyId, actor.teamId),
  }),
  route({
    operation: 'createSshAccess', status: 201, params: IdParams, body: SshAccessRequest.optional(), response: SshAccessInfo,
    summary: 'A short-lived token opening this sandbox over SSH (1 min to 24 h, default 1 h) and a ready ssh command',
    description: 'The token goes in the user name, `<sandboxId>+<token>` (or as the password); only its hash is stored, before the answer. 503 SSH_UNAVAILABLE when the daemon serves no SSH gateway.',
    handler: async ({ core, params, body, actor }) => grantSshAccess(core, params.id, { ...(body?.ttlMs !== undefined ? { ttlMs: body.ttlMs } : {}), ownerApiKeyId: actor.keyId }),
  }),
];
