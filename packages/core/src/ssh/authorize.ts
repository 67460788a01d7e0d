/**
 * Use-cases of the SSH gateway's authentication: who is asking for which sandbox (the user name), and
 * whether a public key or a token opens it. Nothing else opens a sandbox: an unknown, killed or failed
 * sandbox, an unregistered key, a token that is malformed, expired or another sandbox's are all refused,
 * with no hint which (the gateway answers every refusal the same way).
 */
import { SSH_TOKEN_USER_SEPARATOR } from '@ramify/contracts';
import type { Core } from '../context.js';
import { isTerminal } from '../lifecycle/state-machine.js';
import type { SandboxRecord, SshKeyRecord } from '../ports/store.js';
import { hashSshToken, isWellFormedSshToken } from './access.js';

/** What an SSH user name asks for. */
export interface SshUser {
  sandboxId: string;
  /** The token after `+`, when the user name carries one. */
  token: string | null;
  /**
   * A placement reservation (`rsv_...`) after the token, `sbx_...+rst_...+rsv_...`: the API role's SSH relay
   * names the one placement made for a paused sandbox whose host is gone (docs/design/SCALE-OUT.md). It
   * grants nothing by itself: the token authenticates, the host checks the reservation is its own.
   */
  reservationId: string | null;
}

/** Prefix of a placement reservation's id in an SSH user name (core's placement makes `rsv_<hex>`). */
const RESERVATION_PREFIX = 'rsv_';

const SANDBOX_ID = /^sbx[_-]([0-9A-Za-z]{26})$/;

/**
 * Read `sbx_<ulid>`, `sbx_<ulid>+<token>` or `sbx_<ulid>+<token>+rsv_<id>` (the id also lower-cased or with
 * `-`, as in host names: it is normalised to `sbx_` + upper case). Null when the name is not of that form.
 */
export function parseSshUser(user: string): SshUser | null {
  const at = user.indexOf(SSH_TOKEN_USER_SEPARATOR);
  const idPart = at < 0 ? user : user.slice(0, at);
  const m = SANDBOX_ID.exec(idPart);
  if (!m) return null;
  const sandboxId = `sbx_${m[1]!.toUpperCase()}`;
  if (at < 0) return { sandboxId, token: null, reservationId: null };
  const rest = user.slice(at + 1);
  const r = rest.lastIndexOf(`${SSH_TOKEN_USER_SEPARATOR}${RESERVATION_PREFIX}`);
  return r < 0 ? { sandboxId, token: rest, reservationId: null } : { sandboxId, token: rest.slice(0, r), reservationId: rest.slice(r + 1) };
}

/** The sandbox when it can be opened at all: it exists and is neither killed, being killed nor failed. */
async function openable(core: Pick<Core, 'store'>, sandboxId: string): Promise<SandboxRecord | null> {
  const record = await core.store.getSandbox(sandboxId);
  return record !== null && !isTerminal(record.state) && record.state !== 'killing' && record.state !== 'error' ? record : null;
}

/**
 * The registered key with `fingerprint` when it opens `sandboxId`, else null. A key opens its team's
 * sandboxes only: it is looked up among the keys of the sandbox's team (another team's key, or a key
 * registered by no team of this sandbox, opens nothing).
 */
export async function sshKeyOpens(core: Pick<Core, 'store'>, sandboxId: string, fingerprint: string): Promise<SshKeyRecord | null> {
  const sandbox = await openable(core, sandboxId);
  return sandbox ? core.store.findSshKeyByFingerprint(fingerprint, sandbox.teamId) : null;
}

/** Whether `token` is a live token of `sandboxId` (well-formed, stored for that sandbox, not expired). */
export async function sshTokenOpens(core: Pick<Core, 'store' | 'clock'>, sandboxId: string, token: string): Promise<boolean> {
  if (!isWellFormedSshToken(token)) return false;
  const record = await core.store.findSshToken(hashSshToken(token));
  if (!record || record.sandboxId !== sandboxId || core.clock.now() >= record.expiresAt) return false;
  return (await openable(core, sandboxId)) !== null;
}
