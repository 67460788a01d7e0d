/**
 * The SSH gateway's API contract (see docs/design/SSH.md): registered public keys (`/v1/ssh-keys`) and
 * short-lived per-sandbox tokens (`POST /v1/sandboxes/{id}/ssh-access`). The SSH user name is the
 * sandbox id; with a token it is `<sandboxId>+<token>` (or the token is the password).
 */
import { z } from 'zod';
import { MIN_SSH_TOKEN_TTL_MS, MAX_SSH_TOKEN_TTL_MS } from './constants.js';

/** Default port of the SSH gateway (`ramify serve --ssh-listen`, loopback only by default). */
export const DEFAULT_SSH_PORT = 2222;

/** Largest public key line accepted, characters (an RSA 16384-bit key is ~2.8 KB). */
export const MAX_SSH_PUBLIC_KEY_LENGTH = 16_384;

/** Separates the sandbox id from a token in the SSH user name: `sbx_...+rst_...`. */
export const SSH_TOKEN_USER_SEPARATOR = '+';

/** `POST /v1/ssh-keys`: one OpenSSH public key line (`ssh-ed25519 AAAA... comment`, what `ssh-keygen` writes to `*.pub`). */
export const AddSshKeyRequest = z.strictObject({
  publicKey: z.string().min(1).max(MAX_SSH_PUBLIC_KEY_LENGTH),
  /** A label for people; default the key's comment, else its fingerprint. At most 128 characters. */
  name: z.string().min(1).max(128).optional(),
});
export type AddSshKeyRequest = z.infer<typeof AddSshKeyRequest>;

/** A registered public key. It opens its team's sandboxes (see SSH.md and TEAMS.md). */
export const SshKeyInfo = z.object({
  /** `sshk_<ulid>`. */
  id: z.string(),
  name: z.string(),
  /** Key algorithm: `ssh-ed25519`, `ssh-rsa`, `ecdsa-sha2-nistp256`, ... */
  type: z.string(),
  /** OpenSSH's form, `SHA256:` + unpadded base64 of the key blob's sha256 (what `ssh-keygen -lf` prints). */
  fingerprint: z.string(),
  /** The key as registered, `type base64` (the comment is dropped). */
  publicKey: z.string(),
  /** The id of the API key that registered it; null when not known. */
  ownerApiKeyId: z.string().nullable(),
  /** The team it belongs to (its registering key's): it opens that team's sandboxes only. */
  team: z.string(),
  /** ISO time. */
  createdAt: z.string(),
});
export type SshKeyInfo = z.infer<typeof SshKeyInfo>;

/** `GET /v1/ssh-keys`: oldest first. */
export const ListSshKeysResponse = z.object({ keys: z.array(SshKeyInfo) });
export type ListSshKeysResponse = z.infer<typeof ListSshKeysResponse>;

/** `/v1/ssh-keys/:keyId` params. */
export const SshKeyParams = z.strictObject({ keyId: z.string().min(1).max(128) });

/** `POST /v1/sandboxes/{id}/ssh-access`: a token's lifetime, 1 min to 24 h (default 1 h). */
export const SshAccessRequest = z.strictObject({
  ttlMs: z.number().int().min(MIN_SSH_TOKEN_TTL_MS).max(MAX_SSH_TOKEN_TTL_MS).optional(),
});
export type SshAccessRequest = z.infer<typeof SshAccessRequest>;

/** A short-lived token opening one sandbox over SSH, and a ready command using it. */
export const SshAccessInfo = z.object({
  /** Host name or address of the gateway, as clients should dial it. */
  host: z.string(),
  port: z.number().int(),
  /** `<sandboxId>+<token>`: the user name carrying the token, for plain `ssh` without prompts. */
  user: z.string(),
  /** `rst_` + 43 base64url characters. Secret until it expires: whoever holds it gets a shell in the sandbox. */
  token: z.string(),
  /** e.g. `ssh -p 2222 sbx_...+rst_...@127.0.0.1`. */
  command: z.string(),
  /** ISO time after which the token is refused. */
  expiresAt: z.string(),
});
export type SshAccessInfo = z.infer<typeof SshAccessInfo>;
