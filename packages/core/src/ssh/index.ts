/** The SSH gateway's domain: registered keys, access tokens, authentication (see docs/design/SSH.md). */
export { addSshKey, listSshKeys, removeSshKey, toSshKeyInfo, type ParsedSshPublicKey } from './keys.js';
export { grantSshAccess, hashSshToken, revokeSshToken, isWellFormedSshToken, sshCommand, sshTokenUser, SSH_TOKEN_PREFIX, type SshEndpoint } from './access.js';
export { parseSshUser, sshKeyOpens, sshTokenOpens, type SshUser } from './authorize.js';
