/**
 * Private networks' API contract (see docs/design/NETWORKS.md): named networks (`/v1/networks`) that
 * sandboxes join at create (`networks` of `POST /v1/sandboxes`) or live (`/v1/sandboxes/{id}/networks`).
 * Members reach each other by any protocol and port, by address or as `<alias>.<network>.internal`;
 * everything else between sandboxes stays refused.
 */
import { z } from 'zod';
import { DNS_LABEL_PATTERN, DNS_LABEL_RULE } from './constants.js';

/** The zone every private network name lives under: `<alias>.<network>.internal`. */
export const INTERNAL_ZONE = 'internal';

/** Most networks one sandbox may be on at once. */
export const MAX_NETWORKS_PER_SANDBOX = 16;

const Label = (what: string) => z.string().regex(DNS_LABEL_PATTERN, `${what} must be ${DNS_LABEL_RULE}`);

/** A network's name: a DNS label, unique on the daemon. */
export const NetworkName = Label('a network name');
/** A sandbox's name on one network: a DNS label, unique on that network. */
export const NetworkAlias = Label('an alias');

/** `POST /v1/networks`. */
export const CreateNetworkRequest = z.strictObject({ name: NetworkName });
export type CreateNetworkRequest = z.infer<typeof CreateNetworkRequest>;

/**
 * Joining one network: the network (name or id) and the sandbox's alias there (default a short form of
 * its id, `sbx-` and the id's last 8 characters, lower case). Used by `networks` of a create and by
 * `POST /v1/sandboxes/{id}/networks`.
 */
export const NetworkJoinRequest = z.strictObject({
  network: z.string().min(1).max(128).describe('network name or id'),
  alias: NetworkAlias.optional().describe("the sandbox's name on the network (a DNS label); default sbx-<last 8 characters of its id>"),
});
export type NetworkJoinRequest = z.infer<typeof NetworkJoinRequest>;

/** One sandbox on one network. */
export const NetworkMemberInfo = z.object({
  sandboxId: z.string(),
  alias: z.string(),
  /** `<alias>.<network>.internal`: what the network's other members resolve to its address. */
  hostname: z.string(),
  /** When it joined (ISO time). */
  attachedAt: z.string(),
});
export type NetworkMemberInfo = z.infer<typeof NetworkMemberInfo>;

export const NetworkInfo = z.object({
  /** `net_<ulid>`. */
  id: z.string(),
  name: z.string(),
  createdAt: z.string(),
  /** Its sandboxes (not killed ones), by alias. */
  members: z.array(NetworkMemberInfo),
});
export type NetworkInfo = z.infer<typeof NetworkInfo>;

export const ListNetworksResponse = z.object({ networks: z.array(NetworkInfo) });
export type ListNetworksResponse = z.infer<typeof ListNetworksResponse>;

/** One network a sandbox is on. */
export const SandboxNetworkInfo = z.object({
  networkId: z.string(),
  network: z.string(),
  alias: z.string(),
  /** `<alias>.<network>.internal`. */
  hostname: z.string(),
  attachedAt: z.string(),
});
export type SandboxNetworkInfo = z.infer<typeof SandboxNetworkInfo>;

export const SandboxNetworksResponse = z.object({ networks: z.array(SandboxNetworkInfo) });
export type SandboxNetworksResponse = z.infer<typeof SandboxNetworksResponse>;

/**
 * The networks a snapshot's sandbox was on when it was taken (name and alias). Recorded only: a sandbox
 * created from the snapshot joins none of them unless its create asks (`networks`).
 */
export const SnapshotNetworks = z.array(z.object({ network: z.string(), alias: z.string() }));
export type SnapshotNetworks = z.infer<typeof SnapshotNetworks>;

/**
 * The other sandbox of an egress log entry about a connection between two sandboxes: allowed (they share
 * `network`) or refused (`network` null: they share none).
 */
export const EgressPeer = z.object({
  sandboxId: z.string(),
  network: z.string().nullable(),
});
export type EgressPeer = z.infer<typeof EgressPeer>;

/** `<alias>.<network>.internal`. */
export const internalHostname = (alias: string, network: string): string => `${alias}.${network}.${INTERNAL_ZONE}`;
