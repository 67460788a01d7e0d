/**
 * The gateway's authentication: the user name names the sandbox (`sbx_...`, or `sbx_...+rst_...` with a
 * token); a registered public key, or a live token of that sandbox (in the user name, as the password or
 * at a keyboard-interactive prompt), opens it. Everything else is refused alike, and a connection is
 * closed after {@link MAX_AUTH_FAILURES} refusals.
 */
import { parseSshUser, sshKeyOpens, sshTokenOpens, type Core } from '@ramify/core';
import ssh2, { type AuthContext, type ClientInfo, type Connection, type PublicKeyAuthContext } from 'ssh2';
import { fingerprintOf } from './keys.js';

/** Refusals after which the connection is closed (OpenSSH's sshd allows 6 tries). */
export const MAX_AUTH_FAILURES = 10;

/** Methods a refused client is told it may try. */
const METHODS: ['publickey', 'password', 'keyboard-interactive'] = ['publickey', 'password', 'keyboard-interactive'];

/** Who got in, and how. */
export interface SshPrincipal {
  sandboxId: string;
  /** `key` (with the registered key's id) or `token` (with the placement reservation its user name named, if any: SCALE-OUT.md). */
  via: { method: 'key'; keyId: string } | { method: 'token'; reservationId: string | null };
}

/**
 * What became of one request: accepted (with who), refused, or `key-acceptable` (a registered public key
 * offered without a signature was answered "acceptable"; the client signs with it next).
 */
export type AuthOutcome = { outcome: 'accepted'; principal: SshPrincipal } | { outcome: 'refused' } | { outcome: 'key-acceptable' };

/**
 * Decide one authentication request and answer it (`ctx.accept()` or `ctx.reject()`). `onAccepted` is
 * called with the principal just before the accept: ssh2 emits `ready` inside it.
 */
export async function authenticate(core: Core, ctx: AuthContext, onAccepted: (principal: SshPrincipal) => void): Promise<AuthOutcome> {
  const user = parseSshUser(ctx.username);
  if (!user) return refuse(ctx);
  const byToken: SshPrincipal = { sandboxId: user.sandboxId, via: { method: 'token', reservationId: user.reservationId } };
  switch (ctx.method) {
    case 'none':
      return user.token !== null && (await sshTokenOpens(core, user.sandboxId, user.token)) ? accept(ctx, onAccepted, byToken) : refuse(ctx);
    case 'password':
      return (await sshTokenOpens(core, user.sandboxId, ctx.password)) ? accept(ctx, onAccepted, byToken) : refuse(ctx);
    case 'keyboard-interactive': {
      const answer = await new Promise<string>((resolve) => {
        ctx.once('abort', () => resolve(''));
        ctx.prompt([{ prompt: 'Ramify SSH token: ', echo: false }], 'Ramify', '', (answers) => resolve(answers[0] ?? ''));
      });
      return (await sshTokenOpens(core, user.sandboxId, answer)) ? accept(ctx, onAccepted, byToken) : refuse(ctx);
    }
    case 'publickey':
      return publicKey(core, ctx, user.sandboxId, onAccepted);
    default:
      return refuse(ctx);
  }
}

async function publicKey(core: Core, ctx: PublicKeyAuthContext, sandboxId: string, onAccepted: (principal: SshPrincipal) => void): Promise<AuthOutcome> {
  const key = await sshKeyOpens(core, sandboxId, fingerprintOf(ctx.key.data));
  if (!key) return refuse(ctx);
  if (!ctx.signature || !ctx.blob) {
    ctx.accept(); // "this key is acceptable": the client signs with it next
    return { outcome: 'key-acceptable' };
  }
  const registered = ssh2.utils.parseKey(key.publicKey);
  if (registered instanceof Error || registered.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true) return refuse(ctx);
  return accept(ctx, onAccepted, { sandboxId, via: { method: 'key', keyId: key.id } });
}

function accept(ctx: AuthContext, onAccepted: (principal: SshPrincipal) => void, principal: SshPrincipal): AuthOutcome {
  onAccepted(principal);
  ctx.accept();
  return { outcome: 'accepted', principal };
}

function refuse(ctx: AuthContext): AuthOutcome {
  ctx.reject(METHODS);
  return { outcome: 'refused' };
}

/**
 * Authenticate one client connection of a gateway (the host's or the API role's relay): every
 * authentication request through {@link authenticate}, the connection closed after
 * {@link MAX_AUTH_FAILURES} refusals, and `onReady` called with who got in once the client is ready.
 */
export function acceptClient(core: Core, client: Connection, info: ClientInfo, onReady: (principal: SshPrincipal) => void): void {
  let principal: SshPrincipal | null = null;
  let failures = 0;
  // Keystrokes and their echo go out at once (ssh2 documents Connection#setNoDelay; @types/ssh2 lacks it).
  (client as Connection & { setNoDelay(noDelay?: boolean): Connection }).setNoDelay(true);
  client.on('error', (err) => core.logger.debug('ssh: connection error', { client: info.ip, error: err.message }));
  client.on('authentication', (ctx) => {
    authenticate(core, ctx, (accepted) => (principal = accepted))
      .then((result) => {
        if (result.outcome === 'refused' && ctx.method !== 'none' && ++failures >= MAX_AUTH_FAILURES) client.end();
      })
      .catch((err: unknown) => {
        core.logger.warn('ssh: authentication failed with an error', { client: info.ip, error: err instanceof Error ? err.message : String(err) });
        ctx.reject();
      });
  });
  client.on('ready', () => {
    if (!principal) return void client.end();
    core.logger.info('ssh: connected', { sandboxId: principal.sandboxId, client: info.ip, via: principal.via.method, ...(principal.via.method === 'key' ? { keyId: principal.via.keyId } : {}) });
    onReady(principal);
  });
}
