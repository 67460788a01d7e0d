/**
 * SSH gateway routes: public keys registered for SSH (owned by the API key that registers them), and
 * short-lived per-sandbox SSH access tokens with a ready `ssh` command. The gateway itself listens on its
 * own port (`ramify serve --ssh-listen`).
 */
import { AddSshKeyRequest, ListSshKeysResponse, SshAccessInfo, SshAccessRequest, SshKeyInfo, SshKeyParams } from '@ramify/contracts';
import { addSshKey, grantSshAccess, listSshKeys, removeSshKey, toSshKeyInfo } from '@ramify/core';
import { IdParams, route, type RouteSpec } from '../http/route.js';
import { parseSshPublicKey } from '../ssh/keys.js';

export const sshRoutes: RouteSpec[] = [
  route({
    method: 'POST', url: '/v1/ssh-keys', status: 201, action: 'ssh-key.add', body: AddSshKeyRequest, response: SshKeyInfo,
    summary: "Register an OpenSSH public key (one line of a .pub file); it opens its owner's sandboxes over SSH, the sandbox id as user name",
    description: 'The key belongs to the API key that registers it. Today every API key sees every sandbox, so a registered key opens every sandbox; the owner is recorded for per-owner scoping later. 400 SSH_KEY_INVALID for anything but one public key line, 409 SSH_KEY_EXISTS for a key registered already.',
    handler: async ({ core, body, request }) =>
      toSshKeyInfo(await addSshKey(core, { key: parseSshPublicKey(body.publicKey), ...(body.name !== undefined ? { name: body.name } : {}), ownerApiKeyId: request.ramify.apiKeyId })),
  }),
  route({
    method: 'GET', url: '/v1/ssh-keys', summary: 'Registered SSH public keys, oldest first', response: ListSshKeysResponse,
    handler: async ({ core }) => ({ keys: (await listSshKeys(core)).map(toSshKeyInfo) }),
  }),
  route({
    method: 'DELETE', url: '/v1/ssh-keys/:keyId', status: 204, action: 'ssh-key.remove', params: SshKeyParams,
    summary: 'Unregister an SSH public key: it opens nothing from then on (connections already open stay)',
    handler: async ({ core, params }) => removeSshKey(core, params.keyId),
  }),
  route({
    method: 'POST', url: '/v1/sandboxes/:id/ssh-access', status: 201, action: 'sandbox.ssh-access', params: IdParams, body: SshAccessRequest.optional(), response: SshAccessInfo,
    summary: 'A short-lived token opening this sandbox over SSH (1 min to 24 h, default 1 h) and a ready ssh command',
    description: 'The token goes in the user name, `<sandboxId>+<token>` (or as the password); only its hash is stored, before the answer. 503 SSH_UNAVAILABLE when the daemon serves no SSH gateway.',
    handler: async ({ core, params, body, request }) => grantSshAccess(core, params.id, { ...(body?.ttlMs !== undefined ? { ttlMs: body.ttlMs } : {}), ownerApiKeyId: request.ramify.apiKeyId }),
  }),
];
