/**
 * Identifiers: a type prefix plus a monotonic ULID (26 Crockford base32 characters; sorts by creation
 * time, also among ids made in the same millisecond), e.g. `sbx_01HZY3K8T4V5W6X7Y8Z9A0B1C2`.
 */
import { randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';

/**
 * ulid's own source of randomness asks `crypto.randomBytes(1)` once per character: 16 calls, ~150 µs per
 * id made in a new millisecond here (a webhook delivery makes one). This one draws the same
 * cryptographically strong bytes 256 at a time; each byte / 256 is uniform in [0, 1), and ulid takes
 * `floor(x * 32)` of it: its top five bits.
 */
const pool = Buffer.alloc(256);
let poolAt = pool.length;
function randomUnit(): number {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return (pool[poolAt++] as number) / 256;
}

const next = monotonicFactory(randomUnit);

/** `sbx_<ulid>`. */
export const newSandboxId = (): string => `sbx_${next()}`;
/** `snap_<ulid>`. */
export const newSnapshotId = (): string => `snap_${next()}`;
/** `tpl_<ulid>`. */
export const newTemplateId = (): string => `tpl_${next()}`;
/**
 * Prefix of a template build's sandbox (`tplb_<16 hex>`, template-builder/src/image-layer.ts): it has no
 * store row, and reconcile removes one a stopped daemon left behind as a leftover build, not as an
 * unknown orphan (lifecycle/reconcile.ts).
 */
export const TEMPLATE_BUILD_SANDBOX_PREFIX = 'tplb_';

/** Whether `sandboxId` names a template build's sandbox (see {@link TEMPLATE_BUILD_SANDBOX_PREFIX}). */
export const isTemplateBuildSandbox = (sandboxId: string): boolean => sandboxId.startsWith(TEMPLATE_BUILD_SANDBOX_PREFIX);

/** `key_<ulid>` (the id of an API key, not the key). */
export const newApiKeyId = (): string => `key_${next()}`;

/** `net_<ulid>` (a private network). */
export const newNetworkId = (): string => `net_${next()}`;

/** `sshk_<ulid>` (a registered SSH public key). */
export const newSshKeyId = (): string => `sshk_${next()}`;

/** The hostname a sandbox sees: its id, lower-cased, with `-` for `_` (a valid DNS label). */
export function hostnameFor(sandboxId: string): string {
  return sandboxId.toLowerCase().replace(/_/g, '-');
}

/** `whk_<ulid>` (a webhook). */
export const newWebhookId = (): string => `whk_${next()}`;

/** `dlv_<ulid>` (one event's delivery to one webhook). */
export const newDeliveryId = (): string => `dlv_${next()}`;
